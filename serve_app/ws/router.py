"""WS /ws/v1/conversation (seed 002): authenticate, read frames, answer each with typed events, never drop.

The bearer token comes as an `Authorization: Bearer` header (programs) or an `access_token` query parameter
(browsers cannot set headers); without one, in the local token-less mode, `user_id` names the user exactly as over
HTTP. A connection that cannot be authenticated is accepted and closed at once with 1008 `unauthorized`.

Every frame is one `WsEnvelope`. A bad frame — not JSON, binary, too large, an unknown type, a payload field
missing or invalid — is answered with `dialogue.error` (`execution.error` for selection and decide frames) with
code, message and field; the connection stays open and nothing is written. Transport frames are answered at
once; the others run in order, each in its own deadline from its arrival. What one user may hold is bounded
(serve_app/ws/bounds.py): connections, queued frames (one more is answered `busy`), a frame's size (an oversize frame
is refused and its connection closed) and depth, the token's lifetime; frames still queued or running when the
client goes away are dropped, except the one running (or, when none runs yet, the oldest received): it runs to its
commit, and the next `transport.snapshot` shows it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect, WebSocketState

from engine.errors import BatonError
from protocol.base import WireModel
from protocol.ws import (
    DialogueAnswerPayload,
    DialogueInputPayload,
    PingPayload,
    PongPayload,
    ResumePayload,
    SelectionCancelPayload,
    SelectionSubmitPayload,
    WriteDecidePayload,
    WsEnvelope,
    envelope,
    utc_now,
)
from serve_app.agents import dialogue, frames
from serve_app.agents.agent import ConversationAgent
from serve_app.agents.context import Caller, ExecutionError
from serve_app.apidocs.asyncapi import asyncapi_document
from serve_app.errors import error_event
from serve_app.state import AppState, state_of
from serve_app.ws.bounds import (
    CLOSE_CODES,
    Busy,
    InvalidUserId,
    TokenExpired,
    TooManyConnections,
    check_user_id,
    expired,
    token_expiry,
)
from serve_app.ws.reading import FrameError, read_frame

log = logging.getLogger(__name__)
EXECUTION_FRAMES = frozenset({"selection.submit", "selection.cancel", "write.decide"})
UNAUTHORIZED = 1008
# the frame a connection was running when it ended finishes (to its commit, within its deadline): hold it until then
_RUNNING: set[asyncio.Task[None]] = set()
Queued = tuple[str, WireModel, float]  # a frame's type, its payload and when it arrived


class ConversationSocket:
    def __init__(self, websocket: WebSocket, state: AppState) -> None:
        self.ws = websocket
        self.state = state
        self._lock = asyncio.Lock()
        self._open = True
        self._expires_at: float | None = None  # the token's expiry: the socket closes then
        self._busy = False  # a frame is running

    async def send(self, event: WsEnvelope) -> None:
        if not self._open:
            return
        async with self._lock:
            try:
                await self.ws.send_text(event.model_dump_json())
            except (WebSocketDisconnect, RuntimeError, OSError):
                self._open = False  # the client left: the frame runs on and its events stay in the store

    async def authenticate(self) -> Caller | None:
        if self.state.store is None or self.state.conversation is None:
            await self.ws.close(code=1011, reason="store_unavailable")
            return None
        token = self.ws.query_params.get("access_token")
        authorization = self.ws.headers.get("authorization") or (f"Bearer {token}" if token else None)
        claimed = self.ws.query_params.get("user_id")
        try:
            check_user_id(claimed)
            user, key = await self.state.store.callers.of_turn(authorization, claimed)
            self._expires_at = token_expiry(authorization)
        except InvalidUserId as exc:
            await self.refuse(exc)
            return None
        except BatonError:
            await self.ws.close(code=UNAUTHORIZED, reason="unauthorized")
            return None
        return Caller(user=user, key=key, pack=self.state.engine.pack.name)

    async def refuse(self, exc: BatonError) -> None:
        """A refusal that ends the connection: its typed event, then the close code named for it (bounds)."""
        await self.send(self.error("dialogue.error", exc))
        self._open = False
        try:
            await self.ws.close(code=CLOSE_CODES[exc.code], reason=exc.code)
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass  # the client is gone already

    async def run(self) -> None:
        await self.ws.accept()
        caller = await self.authenticate()
        if caller is None:
            return
        limits, connections = self.state.settings.limits, self.state.ws_connections
        if not connections.enter(caller.user.id, limits.ws_connections_per_user):
            await self.refuse(
                TooManyConnections(f"A user may hold {limits.ws_connections_per_user} connections open at once.")
            )
            return
        try:
            await self._serve(caller)
        finally:
            connections.leave(caller.user.id)

    async def _serve(self, caller: Caller) -> None:
        limits = self.state.settings.limits
        queue: asyncio.Queue[Queued | None] = asyncio.Queue()  # bounded by _enqueue
        worker = asyncio.ensure_future(self._work(caller, queue))
        _RUNNING.add(worker)
        worker.add_done_callback(_RUNNING.discard)
        max_bytes = self.state.settings.conversation.max_frame_bytes
        too_many = self.state.limits.frames()  # serve_app/http/ratelimit.py
        try:
            while True:
                message = await self._receive()
                if message is None:
                    await self.refuse(TokenExpired("The access token has expired; log in again and reconnect."))
                    break
                if message["type"] == "websocket.disconnect":
                    break
                arrived = time.time()
                if (refused := too_many()) is not None:
                    await self.send(self.error("dialogue.error", refused))
                    continue
                try:
                    frame, payload = read_frame(message, max_bytes, max_depth=limits.max_json_depth)
                except FrameError as exc:
                    if exc.code in CLOSE_CODES:  # its bytes were buffered whole: one such frame ends the connection
                        await self.refuse(exc)
                        break
                    await self.send(self.error("dialogue.error", exc))
                    continue
                if isinstance(payload, PingPayload):
                    await self.send(envelope("transport.pong", PongPayload(nonce=payload.nonce, server_time=utc_now())))
                elif isinstance(payload, ResumePayload):
                    await self._guarded(frame.type, functools.partial(self._resume, caller, payload))
                else:
                    await self._enqueue(queue, frame.type, payload, arrived, limits.ws_queued_frames)
        except WebSocketDisconnect:
            pass
        finally:
            self._open = False
            self._drop_waiting(queue)
            if self.ws.application_state != WebSocketState.DISCONNECTED:
                try:
                    await self.ws.close()
                except (WebSocketDisconnect, RuntimeError):
                    pass  # the client is gone already

    async def _resume(self, caller: Caller, payload: ResumePayload) -> None:
        self.state.limits.resume(caller.key)
        await self.send(await frames.resume(self._agent, caller, payload.last_seen_message_id))

    async def _receive(self) -> Mapping[str, Any] | None:
        """The next message; None once the connection's token has expired (checked on each frame, and by a timer
        while the client is quiet)."""
        if self._expires_at is None:
            return await self.ws.receive()
        try:
            message = await asyncio.wait_for(self.ws.receive(), timeout=max(self._expires_at - time.time(), 0))
        except TimeoutError:
            return None
        return None if expired(self._expires_at) and message["type"] != "websocket.disconnect" else message

    async def _enqueue(
        self, queue: asyncio.Queue[Queued | None], kind: str, payload: WireModel, arrived: float, limit: int
    ) -> None:
        if queue.qsize() < limit:
            queue.put_nowait((kind, payload, arrived))
            return
        busy = Busy(f"{limit} frames are waiting on this connection already; this one was not run.")
        kind = "execution.error" if kind in EXECUTION_FRAMES else "dialogue.error"
        await self.send(self.error(kind, busy, getattr(payload, "client_message_id", None)))

    def _drop_waiting(self, queue: asyncio.Queue[Queued | None]) -> None:
        """The connection ended: the frames waiting are dropped, except the oldest when none is running yet (it was
        received before the client left: it runs, like a frame already running, to its commit); then the worker
        stops."""
        waiting: list[Queued | None] = []
        while not queue.empty():
            waiting.append(queue.get_nowait())
        if waiting and not self._busy:
            queue.put_nowait(waiting[0])
        queue.put_nowait(None)

    async def _work(self, caller: Caller, queue: asyncio.Queue[Queued | None]) -> None:
        """The connection's frames in arrival order, until the connection ends (`_drop_waiting`)."""
        while (item := await queue.get()) is not None:
            kind, payload, arrived = item
            self._busy = True
            try:
                await self._guarded(
                    kind,
                    self._frame(caller, payload, arrived),
                    client_message_id=getattr(payload, "client_message_id", None),
                )
            finally:
                self._busy = False

    def _frame(self, caller: Caller, payload: WireModel, arrived: float) -> Callable[[], Awaitable[object]]:
        """What a queued frame runs, by its payload's type."""
        agent, send = self._agent, self.send
        if isinstance(payload, DialogueInputPayload):
            said = payload
            return lambda: dialogue.user_input(
                agent,
                caller,
                client_message_id=said.client_message_id,
                modality=said.modality,
                raw_content=said.raw_content,
                source_url=said.source_url,
                arrived=arrived,
                send=send,
            )
        if isinstance(payload, DialogueAnswerPayload):
            answer = payload
            return lambda: dialogue.answer(agent, caller, answer, arrived, send)
        if isinstance(payload, SelectionSubmitPayload):
            submitted = payload
            return lambda: frames.submit(agent, caller, submitted, arrived, send)
        if isinstance(payload, SelectionCancelPayload):
            cancelled = payload
            return lambda: frames.cancel(agent, caller, cancelled, arrived, send)
        assert isinstance(payload, WriteDecidePayload), type(payload).__name__
        decided = payload
        return lambda: frames.decide(agent, caller, decided, arrived, send)

    async def _guarded(
        self, kind: str, run: Callable[[], Awaitable[object]], *, client_message_id: str | None = None
    ) -> None:
        try:
            await run()
        except ExecutionError as exc:
            await self.send(self.error("execution.error", exc.cause, client_message_id))
        except Exception as exc:  # noqa: BLE001 — never a dropped connection: a typed error event instead
            if not isinstance(exc, BatonError):
                log.exception("frame %s failed", kind)
            await self.send(
                self.error("execution.error" if kind in EXECUTION_FRAMES else "dialogue.error", exc, client_message_id)
            )

    @property
    def _agent(self) -> ConversationAgent:
        assert self.state.conversation is not None  # authenticate() let no connection in without one
        return self.state.conversation

    def error(self, kind: str, exc: Exception, client_message_id: str | None = None) -> WsEnvelope:
        event = error_event(kind, exc, retry_after_s=self.state.retry_after_s, client_message_id=client_message_id)
        self.state.metrics.errors.labels(event.payload["code"]).inc()
        return event


router = APIRouter()


@router.get("/asyncapi.json", include_in_schema=False)
async def asyncapi() -> JSONResponse:
    """The WebSocket protocol (AsyncAPI 3.0), next to /openapi.json."""
    return JSONResponse(_asyncapi_document())


@functools.cache
def _asyncapi_document() -> dict[str, Any]:
    return asyncapi_document()


@router.websocket("/ws/v1/conversation")
async def conversation_socket(websocket: WebSocket) -> None:
    await ConversationSocket(websocket, state_of(websocket.app)).run()
