"""Calendar sources and their read-only entries: replaced by key (UID + RECURRENCE-ID) so a re-import or a sync
updates what changed, adds what is new and removes what vanished, in one statement each; and the reads a time range
needs (the entries, the busy intervals)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from engine.calendars.model import CalendarEvent
from protocol.calendar import CalendarEntryDTO

_COLUMNS = (
    "uid",
    "recurrence_id",
    "kind",
    "title",
    "description",
    "location",
    "start_at",
    "end_at",
    "due_at",
    "all_day",
    "tzid",
    "status",
    "busy",
    "last_modified",
    "href",
    "etag",
)
_TYPES = (
    "text[]",
    "text[]",
    "text[]",
    "text[]",
    "text[]",
    "text[]",
    "timestamptz[]",
    "timestamptz[]",
    "timestamptz[]",
    "boolean[]",
    "text[]",
    "text[]",
    "boolean[]",
    "timestamptz[]",
    "text[]",
    "text[]",
)
_CHANGED = " OR ".join(f"e.{c} IS DISTINCT FROM excluded.{c}" for c in _COLUMNS[2:])
_UPSERT = (
    f"INSERT INTO calendar_entries AS e (user_id, source_id, {', '.join(_COLUMNS)})"
    f" SELECT $1, $2, * FROM unnest({', '.join(f'${i + 3}::{t}' for i, t in enumerate(_TYPES))})"
    f" ON CONFLICT (source_id, uid, recurrence_id) DO UPDATE SET"
    f" {', '.join(f'{c} = excluded.{c}' for c in _COLUMNS[2:])}, updated_at = now()"
    f" WHERE {_CHANGED} RETURNING (xmax = 0) AS inserted"
)


@dataclass(frozen=True)
class Replaced:
    added: int
    updated: int
    removed: int


async def replace(
    conn: asyncpg.Connection, user_id: UUID, source_id: UUID, events: list[CalendarEvent], *, href: str | None = None
) -> Replaced:
    """Make the source's entries (those of one CalDAV object when `href` is given) exactly `events`."""
    events = list({e.key: e for e in events}.values())  # a file naming one occurrence twice: the last one counts
    columns = [[getattr(e, c) for e in events] for c in _COLUMNS]
    rows = await conn.fetch(_UPSERT, user_id, source_id, *columns) if events else []
    added = sum(1 for r in rows if r["inserted"])
    removed = await conn.fetchval(
        "WITH gone AS (DELETE FROM calendar_entries WHERE source_id = $1 AND ($2::text IS NULL OR href = $2)"
        " AND (uid, recurrence_id) NOT IN (SELECT * FROM unnest($3::text[], $4::text[])) RETURNING 1)"
        " SELECT count(*) FROM gone",
        source_id,
        href,
        [e.uid for e in events],
        [e.recurrence_id for e in events],
    )
    return Replaced(added=added, updated=len(rows) - added, removed=removed)


async def remove_href(conn: asyncpg.Connection, source_id: UUID, href: str) -> int:
    n: int = await conn.fetchval(
        "WITH gone AS (DELETE FROM calendar_entries WHERE source_id = $1 AND href = $2 RETURNING 1)"
        " SELECT count(*) FROM gone",
        source_id,
        href,
    )
    return n


_ENTRY = (
    "e.id, e.source_id, s.name AS source_name, s.kind AS source_kind, e.uid, e.recurrence_id, e.kind, e.title,"
    " e.description, e.location, e.start_at, e.end_at, e.due_at, e.all_day, e.status, e.busy"
)


async def between(
    conn: asyncpg.Connection, user_id: UUID, *, start_at: datetime, end_at: datetime
) -> list[CalendarEntryDTO]:
    """Entries touching [start_at, end_at): events overlapping it, deadlines due inside it; in time order."""
    rows = await conn.fetch(
        f"SELECT {_ENTRY} FROM calendar_entries e JOIN calendar_sources s ON s.id = e.source_id"
        " WHERE e.user_id = $1 AND ((e.kind = 'event' AND e.start_at < $3 AND e.end_at > $2)"
        "   OR (e.kind = 'event' AND e.start_at = e.end_at AND e.start_at >= $2 AND e.start_at < $3)"
        "   OR (e.kind = 'deadline' AND e.due_at >= $2 AND e.due_at < $3))"
        " ORDER BY coalesce(e.start_at, e.due_at), e.title",
        user_id,
        start_at,
        end_at,
    )
    return [CalendarEntryDTO.model_validate(dict(r)) for r in rows]
