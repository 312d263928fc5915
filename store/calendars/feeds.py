"""Secret feed URLs: a token is shown once and stored as its sha256, so a leaked database names no working feed."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from uuid import UUID

import asyncpg

from engine.calendars.ics_out import FeedItem
from store.errors import NotFound

TOKEN_BYTES = 32


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def create(conn: asyncpg.Connection, user_id: UUID) -> str:
    token = secrets.token_urlsafe(TOKEN_BYTES)
    await conn.execute("INSERT INTO calendar_feeds (user_id, token_hash) VALUES ($1, $2)", user_id, token_hash(token))
    return token


async def revoke(conn: asyncpg.Connection, user_id: UUID, token: str) -> None:
    revoked = await conn.fetchval(
        "UPDATE calendar_feeds SET revoked_at = now() WHERE user_id = $1 AND token_hash = $2 AND revoked_at IS NULL"
        " RETURNING id",
        user_id,
        token_hash(token),
    )
    if revoked is None:
        raise NotFound("No such feed.", field="token")


async def owner(conn: asyncpg.Connection, token: str) -> UUID | None:
    """The user a live feed token belongs to (None: unknown or revoked)."""
    found: UUID | None = await conn.fetchval(
        "SELECT f.user_id FROM calendar_feeds f JOIN users u ON u.id = f.user_id"
        " WHERE f.token_hash = $1 AND f.revoked_at IS NULL AND NOT u.is_deleted",
        token_hash(token),
    )
    return found


async def count(conn: asyncpg.Connection, user_id: UUID) -> int:
    n: int = await conn.fetchval(
        "SELECT count(*) FROM calendar_feeds WHERE user_id = $1 AND revoked_at IS NULL", user_id
    )
    return n


async def items(conn: asyncpg.Connection, user_id: UUID, *, limit: int) -> tuple[list[FeedItem], datetime | None]:
    """The user's live items for a feed (the `limit` latest updated, in a stable order) and the last change to any
    item, a deletion included (the feed's Last-Modified)."""
    rows = await conn.fetch(
        "SELECT * FROM (SELECT id, item_type, title, description, start_at, end_at, due_at, status, version,"
        " created_at, updated_at FROM task_items WHERE user_id = $1 AND NOT is_deleted"
        " ORDER BY updated_at DESC, id LIMIT $2) latest ORDER BY created_at, id",
        user_id,
        limit,
    )
    changed = await conn.fetchval("SELECT max(updated_at) FROM task_items WHERE user_id = $1", user_id)
    return [FeedItem(**dict(r)) for r in rows], changed
