"""Semantic memory around a turn (store/memory.py): the user's earlier messages near the turn's vector, recalled
for the engine, and the logged message's vector kept after the reply, off its path; the user's profile, read for
the planner's prompt (PROFILE.md); and the conversation before the turn, the planner's history."""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from uuid import UUID

from config.llm import LlmConfig
from engine.turn_context import History, Profile, Recall
from store import conversation, facts, memory
from store.database import Database

logger = logging.getLogger(__name__)
_REMEMBERING: set[asyncio.Task[None]] = set()  # vectors being kept after their turn answered


def profiler(db: Database, user_id: UUID) -> Profile:
    """The user's profile (store/facts.py profile_data), read when a turn's planner asks for it."""

    async def read() -> dict[str, Any]:
        async with db.connection() as conn:
            return await facts.profile_data(conn, user_id)

    return read


# what the log holds beside what was said: progress notices are not part of the dialog
_NOT_SAID = frozenset({"execution_processing"})


def historian(db: Database, user_id: UUID, session_id: str, limit: int) -> History | None:
    """The session's conversation before this turn, its last `limit` logged messages (None when 0: the planner then
    sees the session's last exchange)."""
    if limit == 0:
        return None

    async def read() -> list[dict[str, str]]:
        async with db.connection() as conn:
            messages = await conversation.in_session(conn, user_id, session_id, limit=limit)
        return [
            {"role": m.role, "content": m.raw_content}
            for m in messages
            if m.role in ("user", "assistant") and m.raw_content and m.metadata.message_kind not in _NOT_SAID
        ]

    return read


def recaller(db: Database, llm: LlmConfig, user_id: UUID) -> Recall | None:
    """Semantic memory for this user's turn: their earlier messages near a vector (store/memory.py)."""
    if llm.memory_k == 0:
        return None

    async def recall(vector: tuple[float, ...], text: str) -> list[str]:
        async with db.connection() as conn:
            found = await memory.recall(
                conn, user_id=user_id, vector=vector, k=llm.memory_k, min_score=llm.memory_min_score, exclude=(text,)
            )
        return [t for t, _ in found]

    return recall


def remember(db: Database, user_id: UUID, message_id: UUID, vector: tuple[float, ...]) -> None:
    """Keep the logged message's vector, after the reply and off its path: memory is an aid, not part of the
    turn (a failure is logged, never the turn's)."""

    async def keep() -> None:
        try:
            async with db.connection() as conn:
                await memory.remember(conn, user_id=user_id, message_id=message_id, vector=vector)
        except Exception:  # noqa: BLE001
            logger.warning("could not keep the vector of message %s", message_id, exc_info=True)

    task = asyncio.ensure_future(keep())
    _REMEMBERING.add(task)
    task.add_done_callback(_REMEMBERING.discard)
