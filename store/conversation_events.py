"""The WebSocket conversation's events (conversation_events): what a frame produced, for replays and reconnects."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg

from store.errors import Conflict


async def stored(conn: asyncpg.Connection, user_id: UUID, replay_key: str) -> list[dict[str, Any]]:
    """The events the frame with this key produced, in order (as envelopes); [] when it produced none yet."""
    rows = await conn.fetch(
        "SELECT type, payload, created_at FROM conversation_events WHERE user_id = $1 AND replay_key = $2 ORDER BY seq",
        user_id,
        replay_key,
    )
    return [{"type": r["type"], "timestamp": r["created_at"].isoformat(), "payload": r["payload"]} for r in rows]


async def record(
    conn: asyncpg.Connection,
    user_id: UUID,
    replay_key: str,
    events: list[tuple[str, dict[str, Any], UUID | None]],
    *,
    first_seq: int = 1,
) -> None:
    """Store a frame's events `(type, payload, message id)`; call inside the transaction that logs their messages.
    A second frame with the same key racing this one fails here, so its transaction writes nothing."""
    try:
        await conn.executemany(
            "INSERT INTO conversation_events (user_id, replay_key, seq, type, payload, message_id)"
            " VALUES ($1, $2, $3, $4, $5, $6)",
            [
                (user_id, replay_key, first_seq + i, kind, payload, message_id)
                for i, (kind, payload, message_id) in enumerate(events)
            ],
        )
    except asyncpg.UniqueViolationError as exc:
        raise Conflict(
            "This frame is already being answered; send it again to get its result.", field="client_message_id"
        ) from exc


async def count(conn: asyncpg.Connection, user_id: UUID, replay_key: str) -> int:
    found: int = await conn.fetchval(
        "SELECT count(*) FROM conversation_events WHERE user_id = $1 AND replay_key = $2", user_id, replay_key
    )
    return found


async def last(conn: asyncpg.Connection, user_id: UUID) -> dict[str, Any] | None:
    row = await conn.fetchrow(
        "SELECT type, payload, created_at FROM conversation_events WHERE user_id = $1 ORDER BY id DESC LIMIT 1", user_id
    )
    return {"type": row["type"], "timestamp": row["created_at"].isoformat(), "payload": row["payload"]} if row else None
