"""Commit a chat turn in one statement (`baton_commit_turn`, migration 0004): all of it or nothing."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg

from engine.session import StaleSession
from store.conversation import NewMessage, stored_metadata
from store.errors import TurnExists
from store.sessions import SessionLease
from store.worlds import Versioned, WorldChanged

STALE_SESSION, WORLD_CHANGED = "BT001", "BT002"
TURN_KEY = "chat_turns_pk"  # one turn per (user, client_message_id)


async def commit_turn(
    conn: asyncpg.Connection,
    *,
    user_id: UUID,
    session_id: str,
    lease: SessionLease | None,
    state: dict[str, Any] | None,
    world: Versioned | None,
    question_id: UUID | None,
    asked: NewMessage,
    reply: NewMessage,
    client_message_id: str,
    response: dict[str, Any],
) -> None:
    """Save the session state (ending the lease), the user's world, close the answered question, log both messages
    and store the reply. Raises StaleSession when the lease lapsed and WorldChanged when another turn saved the
    world first, TurnExists when a turn with this client_message_id was saved first; either way nothing was written."""
    leased = lease if state is not None else None
    try:
        await conn.execute(
            "SELECT baton_commit_turn($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
            user_id,
            session_id,
            leased.token if leased else None,
            leased.version if leased else None,
            state if leased else None,
            world.world.model_dump(mode="json") if world else None,
            world.version if world else None,
            question_id,
            asked.id,
            asked.modality,
            asked.raw_content,
            asked.source_url,
            stored_metadata(asked),
            reply.id,
            reply.raw_content,
            stored_metadata(reply),
            client_message_id,
            response,
        )
    except asyncpg.UniqueViolationError as exc:
        if exc.constraint_name == TURN_KEY:
            raise TurnExists(
                f"A turn with client_message_id '{client_message_id}' was already saved.", field="client_message_id"
            ) from exc
        raise
    except asyncpg.PostgresError as exc:
        if exc.sqlstate == STALE_SESSION:
            raise StaleSession(session_id) from exc
        if exc.sqlstate == WORLD_CHANGED:
            raise WorldChanged(
                "Another turn changed this user's car or orders at the same time; nothing was saved, retry."
            ) from exc
        raise
