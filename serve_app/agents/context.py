"""What the WebSocket main agent's stages share: who is speaking, execution's reads, a turn's summary."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import asyncpg

from config.budgets import Budgets
from engine.deadline import Deadline, StageTimeout
from engine.errors import Overloaded
from protocol.agents import CalendarFact, CandidateItem, FeedbackFact
from protocol.http_chat import ChatResponse
from protocol.store import ConversationMessageDTO
from protocol.turn_debug import Timings
from protocol.ws import TurnSummary
from store import conversation, facts
from store.calendars import entries
from store.database import Database
from store.users import User

T = TypeVar("T")


class ExecutionError(Exception):
    """A failure in the execution stage: answered as `execution.error` rather than `dialogue.error`."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass(frozen=True)
class Caller:
    user: User
    key: str  # the id the engine and the media store own things by (see serve_app.auth.Callers.of_turn)
    pack: str = ""  # the assistant talked to: one cluster may serve several over one database

    @property
    def session_id(self) -> str:
        """One conversation per user and assistant over the WebSocket, whichever connection it arrives on (seed
        002): a user of two packs served from one cluster has two conversations, never one resumed by the other."""
        return f"ws-{self.pack}-{self.user.id.hex}" if self.pack else f"ws-{self.user.id.hex}"


class StoreFacts:
    """Execution's reads, each a `facts` phase of the frame's deadline."""

    def __init__(self, db: Database, budgets: Budgets, deadline: Deadline) -> None:
        self._db = db
        self._deadline = deadline
        self._budget_s = budgets.stage_s("facts")

    async def _read(self, read: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        try:
            async with self._deadline.phase("facts", self._budget_s):
                async with self._db.connection() as conn:
                    return await read(conn)
        except StageTimeout as exc:
            raise Overloaded(
                "The frame's budget ran out reading the conversation before its execution; no write was "
                "proposed, retry."
            ) from exc

    async def items(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[CandidateItem]:
        return await self._read(lambda conn: facts.items_in_range(conn, user_id, start_at=start_at, end_at=end_at))

    async def feedbacks(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[FeedbackFact]:
        return await self._read(lambda conn: facts.feedbacks_in_range(conn, user_id, start_at=start_at, end_at=end_at))

    async def profile(self, user_id: UUID) -> dict[str, Any]:
        return await self._read(lambda conn: facts.profile_data(conn, user_id))

    async def calendar(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[CalendarFact]:
        async def read(conn: asyncpg.Connection) -> list[CalendarFact]:
            found = await entries.between(conn, user_id, start_at=start_at, end_at=end_at)
            return [CalendarFact.model_validate(e.model_dump(include=set(CalendarFact.model_fields))) for e in found]

        return await self._read(read)

    async def recent(self, user_id: UUID, limit: int) -> list[ConversationMessageDTO]:
        async def read(conn: asyncpg.Connection) -> list[ConversationMessageDTO]:
            return (await conversation.page(conn, user_id, before_message_id=None, limit=limit))[0]

        return await self._read(read)


def summary(status: str, reply: str, deadline: Deadline, response: ChatResponse | None = None) -> TurnSummary:
    timings = response.timings.model_copy(deep=True) if response is not None else Timings(budget_ms=deadline.budget_ms)
    timings.total_ms = round((time.time() - deadline.started) * 1000, 2)
    return TurnSummary(
        status=status,
        reply=reply,
        timings=timings,
        routing_debug=response.routing_debug if response is not None else None,
        workflow=response.workflow if response is not None else None,
        not_done=list(response.not_done) if response is not None else [],
    )
