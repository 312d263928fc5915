"""A user's calendar sources: an uploaded file, a feed URL or a CalDAV calendar; their sync state and errors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from protocol.calendar import CalendarSourceStatus
from store.errors import Conflict, NotFound


@dataclass(frozen=True)
class Source:
    id: UUID
    user_id: UUID
    kind: str
    name: str
    url: str | None
    username: str | None
    password_sealed: bytes | None
    sync_token: str | None
    last_synced_at: datetime | None


_SOURCE = "id, user_id, kind, name, url, username, password_sealed, sync_token, last_synced_at"


async def by_name(conn: asyncpg.Connection, user_id: UUID, name: str) -> Source | None:
    row = await conn.fetchrow(f"SELECT {_SOURCE} FROM calendar_sources WHERE user_id = $1 AND name = $2", user_id, name)
    return Source(**dict(row)) if row else None


async def get(conn: asyncpg.Connection, user_id: UUID, source_id: UUID, *, lock: bool = False) -> Source:
    row = await conn.fetchrow(
        f"SELECT {_SOURCE} FROM calendar_sources WHERE user_id = $1 AND id = $2{' FOR UPDATE' if lock else ''}",
        user_id,
        source_id,
    )
    if row is None:
        raise NotFound("No such calendar source.", field="source_id")
    return Source(**dict(row))


async def create(
    conn: asyncpg.Connection,
    user_id: UUID,
    *,
    kind: str,
    name: str,
    url: str | None = None,
    username: str | None = None,
    password_sealed: bytes | None = None,
) -> Source:
    try:
        row = await conn.fetchrow(
            "INSERT INTO calendar_sources (user_id, kind, name, url, username, password_sealed)"
            f" VALUES ($1, $2, $3, $4, $5, $6) RETURNING {_SOURCE}",
            user_id,
            kind,
            name,
            url,
            username,
            password_sealed,
        )
    except asyncpg.UniqueViolationError:
        raise Conflict(f"A calendar named '{name}' exists already.", field="name") from None
    return Source(**dict(row))


async def delete(conn: asyncpg.Connection, user_id: UUID, source_id: UUID) -> None:
    gone = await conn.fetchval(
        "DELETE FROM calendar_sources WHERE user_id = $1 AND id = $2 RETURNING id", user_id, source_id
    )
    if gone is None:
        raise NotFound("No such calendar source.", field="source_id")


async def synced(conn: asyncpg.Connection, source_id: UUID, *, sync_token: str | None) -> None:
    await conn.execute(
        "UPDATE calendar_sources SET sync_token = $2, last_synced_at = now(), last_error = NULL,"
        " last_error_at = NULL, updated_at = now() WHERE id = $1",
        source_id,
        sync_token,
    )


async def failed(conn: asyncpg.Connection, source_id: UUID, error: str) -> None:
    await conn.execute(
        "UPDATE calendar_sources SET last_error = $2, last_error_at = now(), updated_at = now() WHERE id = $1",
        source_id,
        error[:500],
    )


async def statuses(conn: asyncpg.Connection, user_id: UUID) -> list[CalendarSourceStatus]:
    rows = await conn.fetch(
        "SELECT s.id, s.kind, s.name, s.url, s.username, s.last_synced_at, s.last_error, s.last_error_at,"
        " (SELECT count(*) FROM calendar_entries e WHERE e.source_id = s.id) AS entries"
        " FROM calendar_sources s WHERE s.user_id = $1 ORDER BY s.created_at",
        user_id,
    )
    return [CalendarSourceStatus.model_validate(dict(r)) for r in rows]


async def due(conn: asyncpg.Connection, *, kind: str, interval_s: float, limit: int) -> list[tuple[UUID, UUID]]:
    """(user, source) of the `kind` sources (caldav, url) not synced nor failed for `interval_s`, the longest waiting
    first."""
    rows = await conn.fetch(
        "SELECT user_id, id FROM calendar_sources WHERE kind = $3"
        " AND (last_synced_at IS NULL OR last_synced_at < now() - make_interval(secs => $1))"
        " AND (last_error_at IS NULL OR last_error_at < now() - make_interval(secs => $1))"
        " ORDER BY coalesce(last_synced_at, '-infinity') LIMIT $2",
        interval_s,
        limit,
        kind,
    )
    return [(r["user_id"], r["id"]) for r in rows]


async def claim(conn: asyncpg.Connection, source_id: UUID, *, hold_s: float) -> bool:
    """Take the source's sync for `hold_s` (one replica at a time syncs it); False when another holds it."""
    taken = await conn.fetchval(
        "UPDATE calendar_sources SET sync_claimed_at = now() WHERE id = $1"
        " AND (sync_claimed_at IS NULL OR sync_claimed_at < now() - make_interval(secs => $2)) RETURNING 1",
        source_id,
        hold_s,
    )
    return taken is not None


async def release(conn: asyncpg.Connection, source_id: UUID) -> None:
    await conn.execute("UPDATE calendar_sources SET sync_claimed_at = NULL WHERE id = $1", source_id)
