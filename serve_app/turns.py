"""The one turn runner, shared by the HTTP routes: admission, auth, the store and the engine, inside one deadline.

The deadline starts when the request arrived at the ingress (`ArrivalStamp`), so parsing, admission, auth,
the stored-reply lookup, the session lease, the engine and the commit all spend the same budget, and
`timings.total_ms` is arrival to reply.
"""
from __future__ import annotations

import time
from typing import Literal
from uuid import UUID

from starlette.types import ASGIApp, Receive, Scope, Send

from engine.deadline import Deadline, StageTimeout
from engine.errors import Overloaded, Starting
from engine.events import TurnListener
from protocol.base import ErrorBody, ErrorEnvelope
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from serve_app.rest_api import chat_user
from store.users import User

TurnKind = Literal["chat", "fill_slots"]


TURN_PATHS = frozenset({"/api/v1/agent/chat", "/api/v1/agent/fill-slots", "/api/v1/agent/chat-stream"})


class AdmissionGate:
    """Sheds a turn the admission would refuse before its body is read or validated: under a burst, most
    requests are sheds, and every millisecond one costs is taken from the turns being answered. (The turn
    runner checks again with the turn's own modality.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        serving = getattr(getattr(scope.get("app"), "state", None), "serving", None)
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in TURN_PATHS and serving is not None:
            reason = serving.admission.refusal(serving.engine.admission_ms("text"))
            if reason is not None:
                serving.metrics.shed.inc()
                serving.metrics.errors.labels(Overloaded.code).inc()
                body = ErrorEnvelope(error=ErrorBody(code=Overloaded.code, message=reason)).model_dump_json().encode()
                await send({"type": "http.response.start", "status": 503,
                            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                        (b"retry-after", str(serving.retry_after_s).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


REPLICA_HEADER = "X-Baton-Replica"


class ReplicaName:
    """Names the replica that answered in `REPLICA_HEADER` (sessions are shared, so a conversation may move between
    replicas). Plain ASGI: Starlette's `@app.middleware("http")` costs a task and two streams per request."""

    def __init__(self, app: ASGIApp, name: str) -> None:
        self.app = app
        self._header = (REPLICA_HEADER.lower().encode(), name.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def named(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), self._header]}
            await send(message)

        await self.app(scope, receive, named)


class ArrivalStamp:
    """Outermost ASGI middleware: notes when each request arrived (epoch seconds) in `request.state.arrived`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope.setdefault("state", {})["arrived"] = time.time()
        await self.app(scope, receive, send)


async def run_turn(serving, kind: TurnKind, body: ChatRequest | FillSlotsRequest, *, authorization: str | None,
                   arrived: float, listener: TurnListener | None = None, caller: tuple[User, str] | None = None,
                   message_ids: tuple[UUID, UUID] | None = None, deadline: Deadline | None = None) -> ChatResponse:
    """One turn, through the store when the app has one (else in-process sessions), counted in the metrics;
    `listener` (a chat turn only) hears the turn as it runs. `caller` is the (user, key) a WebSocket authenticated
    when it connected; `message_ids` the ids the turn's two logged messages get; `deadline` the one the caller
    stamped on arrival (a WebSocket frame's, whose later phases then see the turn's escalation), else a new one."""
    if not serving.readiness.ready:
        # never a degraded turn from a replica still warming up: a clear, retryable refusal instead
        raise Starting(f"This replica is still warming up ({serving.readiness.reason}); retry shortly.")
    engine = serving.engine
    modality = body.modality if isinstance(body, ChatRequest) else "text"
    deadline = deadline or engine.deadline(modality, arrived=arrived)
    try:
        async with serving.admission.turn(engine.admission_ms(modality), modality, deadline=deadline):
            stored = serving.persistence
            extra = {"listener": listener} if listener is not None else {}
            if stored is None:
                response = await getattr(engine, kind)(body, deadline=deadline, **extra)
            else:
                settings = stored.settings
                if caller is None:
                    try:
                        async with deadline.phase("auth", settings.budgets.stage_s("auth")):
                            caller = await chat_user(stored, authorization, body.user_id)
                    except StageTimeout as exc:
                        raise Overloaded("The turn's budget ran out checking who sent it; nothing ran, retry.") from exc
                user, key = caller
                if message_ids is not None:
                    extra["message_ids"] = message_ids
                response = await getattr(stored.chat, kind)(body.model_copy(update={"user_id": key}), user.id, deadline, **extra)
    except Overloaded:
        serving.metrics.shed.inc()
        raise
    serving.metrics.observe(response)
    return response
