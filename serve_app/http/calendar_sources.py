"""Calendars in (docs/calendars.md): an uploaded .ics file or a registered feed URL becomes one write request whose
confirmation imports its events; a linked CalDAV calendar syncs both ways in the background; the status of every
source; the agenda of a time range (Baton's items and the calendar entries, each marked by its source)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import PurePath
from typing import Annotated
from uuid import UUID
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Query, Request, Response
from starlette.datastructures import UploadFile
from starlette.types import Message

from engine.calendars.caldav_client import CalDavFailed
from engine.calendars.fetch import checked_url, fetch_feed
from engine.calendars.ics_in import read_calendar
from engine.calendars.model import CalendarEvent, CalendarTooLarge, InvalidCalendar
from engine.errors import InvalidInput
from protocol.calendar import (
    AgendaEntry,
    AgendaResponse,
    CalDavLinkRequest,
    CalendarImportCreated,
    CalendarSourceStatus,
    CalendarStatusResponse,
    FeedUrlRequest,
)
from serve_app.apidocs.openapi import errors
from serve_app.calendar_sync import CalendarSync
from serve_app.http.deps import CurrentUser, StateDep, StoreDep
from serve_app.state import AppState
from store import business
from store.calendars import entries, feeds, imports, sources
from store.errors import StoreUnavailable
from store.turn_log import utc_now  # a write request expires by the database clock, never a pinned one

router = APIRouter(prefix="/api/v1/calendar")
FORM_OVERHEAD_BYTES = 16 * 1024
IMPORT_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "additionalProperties": False,
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "An iCalendar (.ics) file."},
                        "name": {"type": "string", "minLength": 1, "maxLength": 100},
                    },
                }
            }
        },
    }
}


def _sync(state: AppState) -> CalendarSync:
    if state.calendars is None:
        raise StoreUnavailable("This deployment runs without a database.")
    return state.calendars


def _window(state: AppState) -> tuple[datetime, datetime]:
    cfg, now = state.settings.calendar, _sync(state).now()
    return now - timedelta(days=cfg.horizon_past_days), now + timedelta(days=cfg.horizon_days)


async def _events(state: AppState, data: bytes) -> list[CalendarEvent]:
    start, end = _window(state)
    tz, cap = ZoneInfo(state.settings.timezone), state.settings.calendar.max_events
    # parsing and expanding untrusted bytes is CPU work: off the event loop
    return await asyncio.to_thread(read_calendar, data, tz=tz, start=start, end=end, max_events=cap)


async def _form(request: Request, limit: int) -> tuple[bytes, str | None, str | None]:
    """The file (at most `limit` bytes, the body cut off past it) and the optional name of an import form."""
    cap, received, receive = limit + FORM_OVERHEAD_BYTES, 0, request.receive
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise CalendarTooLarge(
            f"The request is {declared} bytes; a calendar file may be at most {limit}.", field="file"
        )

    async def counted() -> Message:
        nonlocal received
        message = await receive()
        received += len(message.get("body", b""))
        if received > cap:
            raise CalendarTooLarge(
                f"The upload passed {cap} bytes; a calendar file may be at most {limit}.", field="file"
            )
        return message

    form = await Request(request.scope, counted).form(max_files=1, max_fields=2)
    file, name = form.get("file"), form.get("name")
    if not isinstance(file, UploadFile):
        raise InvalidInput("Form field 'file' is required and must be a file part.", field="file")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 100 or "\x00" in name):
        raise InvalidInput("name is 1 to 100 characters.", field="name")
    data = await file.read(limit + 1)
    if len(data) > limit:
        raise CalendarTooLarge(f"The calendar file is over the limit of {limit} bytes.", field="file")
    return data, name.strip() if isinstance(name, str) else None, file.filename


@router.post(
    "/imports",
    response_model=CalendarImportCreated,
    status_code=201,
    openapi_extra=IMPORT_FORM,
    responses=errors(400, 401, 409, 413, 422, 429, 503),
)
async def import_file(request: Request, user: CurrentUser, store: StoreDep, state: StateDep) -> CalendarImportCreated:
    """An uploaded .ics file as one pending write request; confirming it imports the events."""
    state.limits.upload(state.limits.ip_of(request.scope))
    data, name, filename = await _form(request, state.settings.calendar.max_upload_bytes)
    events = await _events(state, data)
    name = name or (PurePath(filename).stem[:100] if filename else "") or "导入的日历"
    async with store.db.transaction() as conn:
        created, preview = await imports.request(
            conn, user.id, name=name, kind="upload", url=None, events=events,
            ttl_s=state.settings.database.write_request_ttl_s, now=utc_now(),
        )  # fmt: skip
    return CalendarImportCreated(write_request=created, preview=preview)


@router.post(
    "/subscriptions", response_model=CalendarImportCreated, status_code=201, responses=errors(401, 409, 413, 422, 503)
)
async def register_url(
    body: FeedUrlRequest, user: CurrentUser, store: StoreDep, state: StateDep
) -> CalendarImportCreated:
    """A feed URL, fetched now under `calendar.fetch`; its first import waits for one confirmation."""
    data = await fetch_feed(body.url, state.settings.calendar.fetch)
    events = await _events(state, data)
    async with store.db.transaction() as conn:
        created, preview = await imports.request(
            conn, user.id, name=body.name, kind="url", url=body.url, events=events,
            ttl_s=state.settings.database.write_request_ttl_s, now=utc_now(),
        )  # fmt: skip
    return CalendarImportCreated(write_request=created, preview=preview)


@router.post("/caldav", response_model=CalendarSourceStatus, status_code=201, responses=errors(401, 409, 422, 503))
async def link_caldav(
    body: CalDavLinkRequest, user: CurrentUser, store: StoreDep, state: StateDep
) -> CalendarSourceStatus:
    """Link a CalDAV calendar; the app password is encrypted before it is stored and never returned. The first sync
    starts in the background; its outcome shows in GET /api/v1/calendar/status."""
    syncer = _sync(state)
    checked_url(body.url, allowed_hosts=None, allow_private=state.settings.calendar.caldav.allow_private)
    sealed = syncer.box.seal(body.password)
    async with store.db.connection() as conn:
        source = await sources.create(
            conn, user.id, kind="caldav", name=body.name, url=body.url, username=body.username, password_sealed=sealed
        )
    syncer.kick(user.id, source.id)
    return CalendarSourceStatus(
        id=source.id, kind="caldav", name=source.name, url=source.url, username=source.username, entries=0
    )


@router.post("/sources/{source_id}/sync", response_model=CalendarSourceStatus, responses=errors(401, 404, 422, 503))
async def sync_now(source_id: UUID, user: CurrentUser, store: StoreDep, state: StateDep) -> CalendarSourceStatus:
    """Sync a CalDAV calendar or fetch a subscribed feed URL again now; a failure is in the returned status (as the
    background sync records it), not an error."""
    async with store.db.connection() as conn:
        source = await sources.get(conn, user.id, source_id)
    if source.kind == "caldav":
        try:
            await _sync(state).sync_one(user.id, source_id)
        except CalDavFailed:
            pass
    elif source.kind == "url":
        await _sync(state).refresh_feed(user.id, source_id)
    else:
        raise InvalidCalendar("An uploaded calendar is refreshed by uploading it again.", field="source_id")
    async with store.db.connection() as conn:
        return next(s for s in await sources.statuses(conn, user.id) if s.id == source_id)


@router.delete("/sources/{source_id}", status_code=204, responses=errors(401, 404, 422, 503))
async def delete_source(source_id: UUID, user: CurrentUser, store: StoreDep) -> Response:
    """Unlink a source; its entries go with it (nothing on a CalDAV server is deleted)."""
    async with store.db.connection() as conn:
        await sources.delete(conn, user.id, source_id)
    return Response(status_code=204)


@router.get("/status", response_model=CalendarStatusResponse, responses=errors(401, 503))
async def status(user: CurrentUser, store: StoreDep) -> CalendarStatusResponse:
    async with store.db.connection() as conn:
        return CalendarStatusResponse(
            sources=await sources.statuses(conn, user.id), feeds=await feeds.count(conn, user.id)
        )


@router.get("/agenda", response_model=AgendaResponse, responses=errors(401, 422, 503))
async def agenda(
    user: CurrentUser,
    store: StoreDep,
    start_at: datetime,
    end_at: Annotated[datetime, Query(description="After `start_at` (else 422).")],
) -> AgendaResponse:
    """Baton's items and the calendar entries of [start_at, end_at), in time order, each marked by its source."""
    if start_at.tzinfo is None or end_at.tzinfo is None:
        raise InvalidInput("start_at and end_at need a time zone offset.", field="start_at")
    if end_at <= start_at:
        raise InvalidInput("end_at must be after start_at.", field="end_at")
    async with store.db.connection() as conn:
        items = await business.timeline(conn, user.id, start_at=start_at, end_at=end_at, item_type=None)
        calendar = await entries.between(conn, user.id, start_at=start_at, end_at=end_at)
    lines = [AgendaEntry(source="baton", item=i) for i in items]
    lines += [AgendaEntry(source="calendar", entry=e) for e in calendar]
    return AgendaResponse(entries=sorted(lines, key=_when))


def _when(line: AgendaEntry) -> datetime:
    timed = line.item or line.entry
    assert timed is not None
    when = timed.start_at or timed.due_at
    assert when is not None  # a timeline item and an entry both have one
    return when
