"""A CalDAV calendar's changes applied to Baton, in one transaction: other events become the source's read-only
entries (replaced per object); an edit on the server of an item Baton pushed updates that item, unless Baton changed
it later (conflicts go by last modification; the losing version is kept in the conversation log); a deletion on the
server deletes the entries, or the item."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import asyncpg

from engine.calendars import ics_in
from engine.calendars.caldav_client import RemoteChanges
from engine.calendars.model import CalendarEvent, InvalidCalendar
from protocol.store import ConversationMessageMetadata
from store import conversation
from store.calendars import entries
from store.conversation import NewMessage

# a remote VTODO's status as an item's; an event carries only cancellation
TODO_STATUS = {
    "completed": "completed",
    "in-process": "in_progress",
    "cancelled": "cancelled",
    "needs-action": "planned",
}


@dataclass
class DownReport:
    entries_changed: int = 0
    entries_removed: int = 0
    items_updated: int = 0
    items_deleted: int = 0
    conflicts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Parsed:
    """One remote object read: its occurrences (another calendar's event) or its one component (an item of ours)."""

    href: str
    etag: str | None
    occurrences: list[CalendarEvent]
    single: CalendarEvent | None


def parse_changes(
    changes: RemoteChanges, *, tz: ZoneInfo, start: datetime, end: datetime, max_events: int
) -> list[Parsed]:
    """CPU work: run off the event loop. An object that does not parse is skipped (it stays as it was)."""
    out = []
    for obj in changes.changed:
        try:
            calendar = ics_in.parse(obj.ics)
            occurrences = ics_in.read_calendar(calendar, tz=tz, start=start, end=end, max_events=max_events)
            first = next((c for c in calendar.walk() if c.name in ("VEVENT", "VTODO") and "UID" in c), None)
            single = ics_in.occurrence(first, tz, set()) if first is not None else None
        except InvalidCalendar:
            continue
        events = [_with(e, href=obj.href, etag=obj.etag) for e in occurrences]
        out.append(Parsed(href=obj.href, etag=obj.etag, occurrences=events, single=single))
    return out


def _with(event: CalendarEvent, **changes: Any) -> CalendarEvent:
    return CalendarEvent(**{**event.__dict__, **changes})


async def apply_down(
    conn: asyncpg.Connection, user_id: UUID, source_id: UUID, changes: RemoteChanges, parsed: list[Parsed]
) -> DownReport:
    report = DownReport()
    links = {
        r["href"]: r
        for r in await conn.fetch(
            "SELECT source_id, href, etag, task_item_id, pushed_version FROM calendar_item_links WHERE source_id = $1",
            source_id,
        )
    }
    for obj in parsed:
        link = links.get(obj.href)
        if link is None:
            replaced = await entries.replace(conn, user_id, source_id, obj.occurrences, href=obj.href)
            report.entries_changed += replaced.added + replaced.updated
            report.entries_removed += replaced.removed
        elif obj.etag != link["etag"] and obj.single is not None:
            await _remote_edit(conn, user_id, link, obj, report)
    deleted = set(changes.deleted)
    if changes.full:
        seen = {o.href for o in changes.changed}
        known = {
            r["href"]
            for r in await conn.fetch(
                "SELECT DISTINCT href FROM calendar_entries WHERE source_id = $1 AND href IS NOT NULL", source_id
            )
        }
        deleted |= (known | set(links)) - seen
    for href in deleted:
        if href in links:
            report.items_deleted += await _remote_delete(conn, user_id, links[href])
        else:
            report.entries_removed += await entries.remove_href(conn, source_id, href)
    return report


async def _remote_edit(
    conn: asyncpg.Connection, user_id: UUID, link: asyncpg.Record, obj: Parsed, report: DownReport
) -> None:
    remote = obj.single
    assert remote is not None
    item = await conn.fetchrow(
        "SELECT * FROM task_items WHERE id = $1 AND user_id = $2 FOR UPDATE", link["task_item_id"], user_id
    )
    if item is None or item["is_deleted"]:
        return  # deleted in Baton: the push deletes it on the server
    remote_at = remote.last_modified or datetime.min.replace(tzinfo=ZoneInfo("UTC"))
    baton_changed = item["version"] != link["pushed_version"]
    if baton_changed and item["updated_at"] >= remote_at:
        await _log_loser(conn, user_id, item["id"], "calendar", _event_fields(remote), remote_at)
        report.conflicts.append(str(item["id"]))
        return  # Baton's version wins: the push overwrites the server's
    if baton_changed:
        await _log_loser(conn, user_id, item["id"], "baton", _item_fields(item), item["updated_at"])
        report.conflicts.append(str(item["id"]))
    values = _item_update(item, remote)
    version = await conn.fetchval(
        "UPDATE task_items SET title = $2, description = $3, start_at = $4, end_at = $5, due_at = $6, status = $7,"
        " version = version + 1, updated_at = now() WHERE id = $1 RETURNING version",
        item["id"],
        *values,
    )
    await conn.execute(
        "UPDATE calendar_item_links SET etag = $3, pushed_version = $4 WHERE source_id = $1 AND href = $2",
        link["source_id"],
        obj.href,
        obj.etag,
        version,
    )
    report.items_updated += 1


def _item_update(item: asyncpg.Record, remote: CalendarEvent) -> tuple[Any, ...]:
    status = item["status"]
    if remote.kind == "deadline":
        status = TODO_STATUS.get(remote.status or "", status)
        if status == "planned" and item["status"] == "deferred":
            status = "deferred"
        return remote.title, remote.description, item["start_at"], item["end_at"], remote.due_at, status
    if remote.status == "cancelled":
        status = "cancelled"
    end = remote.end_at if remote.end_at and remote.start_at and remote.end_at >= remote.start_at else remote.start_at
    return remote.title, remote.description, remote.start_at, end, item["due_at"], status


async def _remote_delete(conn: asyncpg.Connection, user_id: UUID, link: asyncpg.Record) -> int:
    await conn.execute(
        "DELETE FROM calendar_item_links WHERE task_item_id = $1 AND href = $2", link["task_item_id"], link["href"]
    )
    deleted = await conn.fetchval(
        "UPDATE task_items SET is_deleted = true, deleted_at = now(), version = version + 1, updated_at = now()"
        " WHERE id = $1 AND user_id = $2 AND NOT is_deleted RETURNING 1",
        link["task_item_id"],
        user_id,
    )
    return 1 if deleted else 0


def _event_fields(event: CalendarEvent) -> dict[str, Any]:
    keys = ("title", "description", "start_at", "end_at", "due_at", "status")
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k in keys if (v := getattr(event, k)) is not None}


def _item_fields(item: asyncpg.Record) -> dict[str, Any]:
    keys = ("title", "description", "start_at", "end_at", "due_at", "status", "version")
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k in keys if (v := item[k]) is not None}


async def _log_loser(
    conn: asyncpg.Connection, user_id: UUID, item_id: UUID, side: str, fields: dict[str, Any], modified: datetime
) -> None:
    """The version a conflict discarded, kept in the conversation log as a system notice."""
    winner = "Baton" if side == "calendar" else "日历"
    text = f"日历同步冲突：「{fields.get('title', '')}」以{winner}中较晚的修改为准，另一版本已保存在此记录中。"
    metadata = ConversationMessageMetadata(
        message_kind="system_notice",
        parsed_params={
            "calendar_conflict": {
                "task_item_id": str(item_id),
                "losing_side": side,
                "losing_modified_at": modified.isoformat(),
                "losing_version": fields,
            }
        },
    )
    await conversation.append(conn, user_id, [NewMessage(role="system", raw_content=text, metadata=metadata)])


def window(now: datetime, past_days: int, days: int) -> tuple[datetime, datetime]:
    return now - timedelta(days=past_days), now + timedelta(days=days)
