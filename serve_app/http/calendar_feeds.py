"""The feed out (docs/calendars.md): POST /api/v1/calendar/feeds makes a secret feed URL, DELETE on it revokes it, and
GET /api/v1/calendar/feeds/{token}.ics serves the user's items as iCalendar to any calendar app, without a login (the
token is the secret), with an ETag and Last-Modified so an unchanged feed answers 304."""

from __future__ import annotations

import asyncio
import hashlib
from email.utils import format_datetime
from typing import Annotated
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Header, Path, Response

from engine.calendars.ics_out import feed_calendar
from protocol.calendar import FeedCreated
from serve_app.apidocs.openapi import errors
from serve_app.http.deps import CurrentUser, StateDep, StoreDep
from store.calendars import feeds
from store.errors import NotFound

router = APIRouter(prefix="/api/v1/calendar")
TOKEN = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{20,100}$", description="The feed's secret token.")]
FEED_PATH = "/api/v1/calendar/feeds/{token}.ics"
ICS = {"text/calendar": {"schema": {"type": "string"}}}


@router.post("/feeds", response_model=FeedCreated, status_code=201, responses=errors(401, 503))
async def create_feed(user: CurrentUser, store: StoreDep, state: StateDep) -> FeedCreated:
    async with store.db.connection() as conn:
        token = await feeds.create(conn, user.id)
    return FeedCreated(url=state.settings.calendar.feed_base_url + FEED_PATH.format(token=token), token=token)


@router.delete("/feeds/{token}.ics", status_code=204, responses=errors(401, 404, 422, 503))
async def revoke_feed(token: TOKEN, user: CurrentUser, store: StoreDep) -> Response:
    async with store.db.connection() as conn:
        await feeds.revoke(conn, user.id, token)
    return Response(status_code=204)


@router.get(
    "/feeds/{token}.ics",
    response_class=Response,
    responses={
        200: {"description": "The user's items as VEVENT (with a start) and VTODO (without).", "content": ICS},
        304: {"description": "Unchanged since the ETag sent in If-None-Match."},
        **errors(404, 422, 503),
    },
)
async def feed(
    token: TOKEN, store: StoreDep, state: StateDep, if_none_match: Annotated[str | None, Header()] = None
) -> Response:
    async with store.db.connection() as conn:
        user_id = await feeds.owner(conn, token)
        if user_id is None:
            raise NotFound("No such feed.", field="token")
        items, changed = await feeds.items(conn, user_id, limit=state.settings.calendar.feed_max_items)
    tz = ZoneInfo(state.settings.timezone)
    body = await asyncio.to_thread(feed_calendar, items, tz, name="Baton")  # CPU work: off the event loop
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {"ETag": etag, "Cache-Control": "private, no-cache"}
    if changed is not None:
        headers["Last-Modified"] = format_datetime(changed, usegmt=True)
    if if_none_match is not None and etag in {t.strip() for t in if_none_match.split(",")}:
        return Response(status_code=304, headers=headers)
    return Response(content=body, media_type="text/calendar; charset=utf-8", headers=headers)
