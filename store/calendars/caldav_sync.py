"""One sync of a linked CalDAV calendar: its changes since the stored sync-token come down (store.calendars.
caldav_down), then Baton's items changed since their last push go up and items deleted in Baton are deleted on the
server. The server is spoken to in a worker thread (the `caldav` library blocks), never inside a transaction; a
failure is recorded on the source (GET /api/v1/calendar/status) and raised as CalDavFailed to the caller."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit
from uuid import UUID
from zoneinfo import ZoneInfo

import asyncpg

from config.calendar import CalendarConfig
from engine.calendars.caldav_client import CalDavCalendar, CalDavFailed, RemoteChanges
from engine.calendars.fetch import resolve_checked
from engine.calendars.ics_out import FeedItem, item_component, single_object
from engine.calendars.model import FeedRefused
from engine.calendars.secrets import PasswordBox
from store.calendars import sources
from store.calendars.caldav_down import DownReport, apply_down, parse_changes, window
from store.database import Database

_PUSH = (
    "SELECT t.id, t.item_type, t.title, t.description, t.start_at, t.end_at, t.due_at, t.status, t.version,"
    " t.created_at, t.updated_at, t.is_deleted, l.href FROM task_items t"
    " LEFT JOIN calendar_item_links l ON l.task_item_id = t.id AND l.source_id = $2"
    " WHERE t.user_id = $1 AND (t.start_at IS NOT NULL OR t.due_at IS NOT NULL)"
    " AND ((NOT t.is_deleted AND (l.href IS NULL OR l.pushed_version <> t.version))"
    "   OR (t.is_deleted AND l.href IS NOT NULL))"
    " ORDER BY t.updated_at LIMIT $3"
)


@dataclass(frozen=True)
class SyncReport:
    down: DownReport
    pushed: int
    deleted_remote: int


async def sync(
    db: Database, box: PasswordBox, cfg: CalendarConfig, tz: ZoneInfo, user_id: UUID, source_id: UUID, *, now: datetime
) -> SyncReport:
    async with db.connection() as conn:
        source = await sources.get(conn, user_id, source_id)
    if source.kind != "caldav" or source.url is None or source.password_sealed is None:
        raise FeedRefused("Only a linked CalDAV calendar syncs.", field="source_id")
    try:
        return await _sync(db, box, cfg, tz, source, now)
    except (CalDavFailed, FeedRefused) as exc:
        reason = exc.reason if isinstance(exc, CalDavFailed) else exc.message
        async with db.connection() as conn:
            await sources.failed(conn, source_id, reason)
        raise CalDavFailed(reason) from None


async def _sync(
    db: Database, box: PasswordBox, cfg: CalendarConfig, tz: ZoneInfo, source: sources.Source, now: datetime
) -> SyncReport:
    assert source.url is not None and source.password_sealed is not None
    parts = urlsplit(source.url)
    await resolve_checked(
        parts.hostname or "",
        parts.port or (443 if parts.scheme == "https" else 80),
        allow_private=cfg.caldav.allow_private,
    )
    remote = CalDavCalendar(
        source.url, source.username or "", box.open(source.password_sealed), timeout_s=cfg.caldav.timeout_s
    )
    try:
        changes: RemoteChanges = await asyncio.to_thread(
            remote.changes, source.sync_token, max_objects=cfg.caldav.max_objects
        )
        start, end = window(now, cfg.horizon_past_days, cfg.horizon_days)
        parsed = await asyncio.to_thread(parse_changes, changes, tz=tz, start=start, end=end, max_events=cfg.max_events)
        async with db.transaction() as conn:
            down = await apply_down(conn, source.user_id, source.id, changes, parsed)
        pushed, deleted = await _push(db, remote, source, tz, cfg.caldav.max_objects)
        async with db.connection() as conn:
            await sources.synced(conn, source.id, sync_token=changes.sync_token)
    finally:
        await asyncio.to_thread(remote.close)
    return SyncReport(down=down, pushed=pushed, deleted_remote=deleted)


async def _push(
    db: Database, remote: CalDavCalendar, source: sources.Source, tz: ZoneInfo, limit: int
) -> tuple[int, int]:
    async with db.connection() as conn:
        rows = await conn.fetch(_PUSH, source.user_id, source.id, limit)
    pushed = deleted = 0
    for row in rows:
        if row["is_deleted"]:
            await asyncio.to_thread(remote.delete, row["href"])
            async with db.connection() as conn:
                await conn.execute(
                    "DELETE FROM calendar_item_links WHERE source_id = $1 AND task_item_id = $2", source.id, row["id"]
                )
            deleted += 1
            continue
        fields = {k: row[k] for k in FeedItem.__dataclass_fields__}
        component = item_component(FeedItem(**fields), tz)
        ics = single_object(component, tz)
        href, etag = await asyncio.to_thread(remote.put, ics, uid=str(component["UID"]), href=row["href"])
        async with db.connection() as conn:
            await _linked(conn, source, row["id"], href, etag, row["version"])
        pushed += 1
    return pushed, deleted


async def _linked(
    conn: asyncpg.Connection, source: sources.Source, item_id: UUID, href: str, etag: str | None, version: int
) -> None:
    await conn.execute(
        "INSERT INTO calendar_item_links (user_id, source_id, task_item_id, href, etag, pushed_version)"
        " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (source_id, task_item_id)"
        " DO UPDATE SET href = $4, etag = $5, pushed_version = $6, pushed_at = now()",
        source.user_id,
        source.id,
        item_id,
        href,
        etag,
        version,
    )
