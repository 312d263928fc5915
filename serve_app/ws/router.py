"""WS /ws/v1/conversation (seed 002): authenticate, read frames, answer each with typed events, never drop.

The bearer token comes as an `Authorization: Bearer` header (programs) or an `access_token` query parameter
(browsers cannot set headers); without one, in the local token-less mode, `user_id` names the user exactly as over
HTTP. A connection that cannot be authenticated is accepted and closed at once with 1008 `unauthorized`.

Every frame is one `WsEnvelope`. A bad frame — not JSON, binary, too large, an unknown type, a payload field
missing or invalid — is answered with `dialogue.error` (`execution.error` for selection and decide frames) with
code, message and field; the connection stays open and nothing is written. Transport frames are answered at
once; the others run in order, each in its own deadline from its arrival, and run to their commit even when the
client goes away (what they produced is in the next `transport.snapshot`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState

from engine.errors import BatonError
from protocol.base import WireModel
from protocol.ws import (
    CLIENT_PAYLOADS,
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

log = logging.getLogger(__name__)
EXECUTION_FRAMES = frozenset({"selection.submit", "selection.cancel", "write.decide"})
UNAUTHORIZED = 1008
# frames outlive a client that left: hold them until they have committed
_RUNNING: set[asyncio.Task[None]] = set()
Queued = tuple[str, WireModel, float]  # a frame's type, its payload and when it arrived


class FrameError(BatonError):
    """A frame that cannot be read; `code` says why."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.code = code


def read_frame(message: Mapping[str, Any], max_bytes: int) -> tuple[WsEnvelope, WireModel]:
    """The envelope and its typed payload, or FrameError."""
    text = message.get("text")
    if text is None:
        raise FrameError("binary_frame", "Frames are JSON text (a WsEnvelope), not binary.")
    if len(text.encode("utf-8")) > max_bytes:
        raise FrameError("frame_too_large", f"A frame holds at most {max_bytes} bytes.")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FrameError("invalid_json", f"The frame is not valid JSON: {exc.msg}.") from exc
    try:
        frame = WsEnvelope.model_validate(raw)
    except ValidationError as exc:
        raise _field_error(exc, prefix="") from exc
    model = CLIENT_PAYLOADS.get(frame.type)
    if model is None:
        raise FrameError(
            "unknown_type", f"Unknown frame type {frame.type!r}; expected one of {', '.join(CLIENT_PAYLOADS)}.", "type"
        )
    try:
        return frame, model.model_validate(frame.payload)
    except ValidationError as exc:
        raise _field_error(exc, prefix="payload") from exc


def _field_error(exc: ValidationError, *, prefix: str) -> FrameError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in (prefix, *first.get("loc", ())) if p != "")
    code = "missing_field" if first.get("type") == "missing" else "invalid_field"
    return FrameError(code, f"{where or 'frame'}: {first.get('msg', 'invalid')}", where or None)


class ConversationSocket:
    def __init__(self, websocket: WebSocket, state: AppState) -> None:
        self.ws = websocket
        self.state = state
        self._lock = asyncio.Lock()
        self._open = True

    async def send(self, event: WsEnvelope) -> None:
        if not self._open:
            return
        async with self._lock:
            try:
                await self.ws.send_text(event.model_dump_json())
            except (WebSocketDisconnect, RuntimeError, OSError):
                self._open = False  # the client left; the frame runs on and its events stay in the store

    async def authenticate(self) -> Caller | None:
        if self.state.store is None or self.state.conversation is None:
            await self.ws.close(code=1011, reason="store_unavailable")
            return None
        token = self.ws.query_params.get("access_token")
        authorization = self.ws.headers.get("authorization") or (f"Bearer {token}" if token else None)
        try:
            user, key = await self.state.store.callers.of_turn(authorization, self.ws.query_params.get("user_id"))
        except BatonError:
            await self.ws.close(code=UNAUTHORIZED, reason="unauthorized")
            return None
        return Caller(user=user, key=key)

    async def run(self) -> None:
        await self.ws.accept()
        caller = await self.authenticate()
        if caller is None:
            return
        queue: asyncio.Queue[Queued | None] = asyncio.Queue()
        worker = asyncio.ensure_future(self._work(caller, queue))
        _RUNNING.add(worker)
        worker.add_done_callback(_RUNNING.discard)
        max_bytes = self.state.settings.conversation.max_frame_bytes
        too_many = self.state.limits.frames()  # serve_app/http/ratelimit.py
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                arrived = time.time()
                if (refused := too_many()) is not None:
                    await self.send(self.error("dialogue.error", refused))
                    continue
                try:
                    frame, payload = read_frame(message, max_bytes)
                except FrameError as exc:
                    await self.send(self.error("dialogue.error", exc))
                    continue
                if isinstance(payload, PingPayload):
                    await self.send(envelope("transport.pong", PongPayload(nonce=payload.nonce, server_time=utc_now())))
                elif isinstance(payload, ResumePayload):
                    await self._guarded(frame.type, functools.partial(self._resume, caller, payload))
                else:
                    queue.put_nowait((frame.type, payload, arrived))
        except WebSocketDisconnect:
            pass
        finally:
            self._open = False
            queue.put_nowait(None)
            if self.ws.application_state != WebSocketState.DISCONNECTED:
                try:
                    await self.ws.close()
                except (WebSocketDisconnect, RuntimeError):
                    pass  # the client is gone already

    async def _resume(self, caller: Caller, payload: ResumePayload) -> None:
        self.state.limits.resume(caller.key)
        await self.send(await frames.resume(self._agent, caller, payload.last_seen_message_id))

    async def _work(self, caller: Caller, queue: asyncio.Queue[Queued | None]) -> None:
        """The connection's frames in arrival order; after a disconnect, those already received still run."""
        while (item := await queue.get()) is not None:
            kind, payload, arrived = item
            await self._guarded(
                kind,
                self._frame(caller, payload, arrived),
                client_message_id=getattr(payload, "client_message_id", None),
            )

    def _frame(self, caller: Caller, payload: WireModel, arrived: float) -> Callable[[], Awaitable[None]]:
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
        self, kind: str, run: Callable[[], Awaitable[None]], *, client_message_id: str | None = None
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
