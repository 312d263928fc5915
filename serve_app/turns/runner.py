"""The one turn runner, shared by HTTP chat, fill-slots, chat-stream and the WebSocket: readiness, admission, the
caller, the store and the engine, inside one deadline.

The deadline starts when the request arrived at the ingress (`ArrivalStamp`), so parsing, admission, auth,
the stored-reply lookup, the session lease, the engine and the commit all spend the same budget, and
`timings.total_ms` is arrival to reply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar
from uuid import UUID

from engine.deadline import Deadline, StageTimeout
from engine.errors import Overloaded, Starting
from engine.events import TurnListener
from engine.media import check_modality
from engine.turn import TurnEngine
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from serve_app.auth import Callers
from serve_app.metrics import TurnMetrics
from serve_app.readiness import Readiness
from serve_app.turns.admission import Admission
from serve_app.turns.stored import StoredChat
from store.users import User

Caller = tuple[User, str]  # the account and the key the engine owns things by (serve_app.auth.Callers.of_turn)
T = TypeVar("T", ChatRequest, FillSlotsRequest)


class TurnRunner:
    """Runs chat and fill-slots turns. With `stored` and `callers` (the served app) sessions, the log and accounts
    are in PostgreSQL; without them (an in-process app) sessions stay in the engine's own store."""

    def __init__(
        self,
        *,
        engine: TurnEngine,
        admission: Admission,
        metrics: TurnMetrics,
        readiness: Readiness,
        stored: StoredChat | None = None,
        callers: Callers | None = None,
    ) -> None:
        self.engine = engine
        self.admission = admission
        self.metrics = metrics
        self.readiness = readiness
        self._stored = stored
        self._callers = callers

    def deadline(self, modality: str, arrived: float) -> Deadline:
        return self.engine.deadline(modality, arrived=arrived)

    def admit(self, modality: str) -> None:
        """Shed a turn the admission would refuse before it costs anything (the HTTP gate and the WebSocket call this
        before reading a body or the store; the turn checks again when it starts)."""
        reason = self.admission.refusal(self.engine.admission_ms(modality), modality)
        if reason is not None:
            self.metrics.shed.inc()
            raise Overloaded(reason)

    async def chat(
        self,
        body: ChatRequest,
        *,
        authorization: str | None,
        arrived: float,
        listener: TurnListener | None = None,
        caller: Caller | None = None,
        message_ids: tuple[UUID, UUID] | None = None,
        deadline: Deadline | None = None,
    ) -> ChatResponse:
        """A chat turn; `listener` hears it as it runs. `caller`: the (user, key) a WebSocket authenticated when it
        connected; `message_ids`: the ids its two logged messages get; `deadline`: the one the caller stamped on
        arrival (a WebSocket frame's, whose later phases then see the turn's escalation), else a new one."""
        if self._stored is not None:
            check_modality(
                body
            )  # before a shadow account, a lease or anything else is written (engine.chat checks it in-process)
        deadline = deadline or self.deadline(body.modality, arrived)

        async def stored(key_body: ChatRequest, user_id: UUID) -> ChatResponse:
            assert self._stored is not None
            return await self._stored.chat(key_body, user_id, deadline, listener=listener, message_ids=message_ids)

        return await self._run(
            body,
            body.modality,
            deadline,
            authorization,
            caller,
            stored,
            lambda: self.engine.chat(body, deadline=deadline, listener=listener),
        )

    async def fill_slots(
        self,
        body: FillSlotsRequest,
        *,
        authorization: str | None,
        arrived: float,
        caller: Caller | None = None,
        message_ids: tuple[UUID, UUID] | None = None,
        deadline: Deadline | None = None,
    ) -> ChatResponse:
        """A fill-slots turn: continues the session's task or paused workflow."""
        deadline = deadline or self.deadline("text", arrived)

        async def stored(key_body: FillSlotsRequest, user_id: UUID) -> ChatResponse:
            assert self._stored is not None
            return await self._stored.fill_slots(key_body, user_id, deadline, message_ids=message_ids)

        return await self._run(
            body,
            "text",
            deadline,
            authorization,
            caller,
            stored,
            lambda: self.engine.fill_slots(body, deadline=deadline),
        )

    async def _run(
        self,
        body: T,
        modality: str,
        deadline: Deadline,
        authorization: str | None,
        caller: Caller | None,
        stored: Callable[[T, UUID], Awaitable[ChatResponse]],
        in_process: Callable[[], Awaitable[ChatResponse]],
    ) -> ChatResponse:
        if not self.readiness.ready:
            # never a degraded turn from a replica still warming up: a clear, retryable refusal instead
            raise Starting(f"This replica is still warming up ({self.readiness.reason}); retry shortly.")
        try:
            async with self.admission.turn(self.engine.admission_ms(modality), modality, deadline=deadline):
                if self._stored is None:
                    response = await in_process()
                else:
                    user, key = caller or await self._caller(authorization, body.user_id, deadline)
                    response = await stored(body.model_copy(update={"user_id": key}), user.id)
        except Overloaded:
            self.metrics.shed.inc()
            raise
        self.metrics.observe(response)
        return response

    async def _caller(self, authorization: str | None, claimed: str, deadline: Deadline) -> Caller:
        assert self._callers is not None
        try:
            async with deadline.phase("auth", self.engine.settings.budgets.stage_s("auth")):
                return await self._callers.of_turn(authorization, claimed)
        except StageTimeout as exc:
            raise Overloaded("The turn's budget ran out checking who sent it; nothing ran, retry.") from exc
