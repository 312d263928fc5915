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
import json
import logging
import time
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState

from engine.errors import BatonError
from protocol.ws import CLIENT_PAYLOADS, ErrorPayload, PongPayload, WsEnvelope, envelope, utc_now
from serve_app import conversation_frames as frames
from serve_app.asyncapi import asyncapi_document
from serve_app.conversation_context import Caller, ExecutionError
from serve_app.rest_api import chat_user

log = logging.getLogger(__name__)
EXECUTION_FRAMES = frozenset({"selection.submit", "selection.cancel", "write.decide"})
UNAUTHORIZED = 1008
_RUNNING: set[asyncio.Task] = set()  # frames outlive a client that left: hold them until they have committed


class FrameError(BatonError):
    """A frame that cannot be read; `code` says why."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.code = code


def read_frame(message: dict, max_bytes: int) -> tuple[WsEnvelope, object]:
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
        raise FrameError("unknown_type", f"Unknown frame type {frame.type!r}; expected one of {', '.join(CLIENT_PAYLOADS)}.", "type")
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
    def __init__(self, websocket: WebSocket, retryable: tuple[type[BatonError], ...]) -> None:
        self.ws = websocket
        self.retryable = retryable
        self.serving = getattr(websocket.app.state, "serving", None)
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
        persistence = getattr(self.serving, "persistence", None)
        if persistence is None:
            await self.ws.close(code=1011, reason="store_unavailable")
            return None
        token = self.ws.query_params.get("access_token")
        authorization = self.ws.headers.get("authorization") or (f"Bearer {token}" if token else None)
        try:
            user, key = await chat_user(persistence, authorization, self.ws.query_params.get("user_id"))
        except BatonError:
            await self.ws.close(code=UNAUTHORIZED, reason="unauthorized")
            return None
        return Caller(user=user, key=key)

    async def run(self) -> None:
        await self.ws.accept()
        caller = await self.authenticate()
        if caller is None:
            return
        queue: asyncio.Queue = asyncio.Queue()
        worker = asyncio.ensure_future(self._work(caller, queue))
        _RUNNING.add(worker)
        worker.add_done_callback(_RUNNING.discard)
        max_bytes = self.serving.persistence.settings.conversation.max_frame_bytes
        try:
            while True:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    break
                arrived = time.time()
                try:
                    frame, payload = read_frame(message, max_bytes)
                except FrameError as exc:
                    await self.send(self.error("dialogue.error", exc))
                    continue
                if frame.type == "transport.ping":
                    await self.send(envelope("transport.pong", PongPayload(nonce=payload.nonce, server_time=utc_now())))
                elif frame.type == "transport.resume":
                    await self._guarded(frame.type, lambda: self._resume(caller, payload))
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

    async def _resume(self, caller: Caller, payload) -> None:
        await self.send(await frames.resume(self.serving.conversation, caller, payload.last_seen_message_id))

    async def _work(self, caller: Caller, queue: asyncio.Queue) -> None:
        """The connection's frames in arrival order; after a disconnect, those already received still run."""
        agent = self.serving.conversation
        while (item := await queue.get()) is not None:
            kind, payload, arrived = item
            if kind == "dialogue.input":
                run = lambda: agent.dialogue(caller, client_message_id=payload.client_message_id, modality=payload.modality,  # noqa: E731
                                             raw_content=payload.raw_content, source_url=payload.source_url,
                                             arrived=arrived, send=self.send)
            elif kind == "dialogue.answer":
                run = lambda: agent.answer(caller, payload, arrived, self.send)  # noqa: E731
            else:
                handler = {"selection.submit": frames.submit, "selection.cancel": frames.cancel, "write.decide": frames.decide}[kind]
                run = lambda: handler(agent, caller, payload, arrived, self.send)  # noqa: E731
            await self._guarded(kind, run, client_message_id=getattr(payload, "client_message_id", None))

    async def _guarded(self, kind: str, run: Callable[[], Awaitable[None]], *, client_message_id: str | None = None) -> None:
        try:
            await run()
        except ExecutionError as exc:
            await self.send(self.error("execution.error", exc.cause, client_message_id))
        except Exception as exc:  # noqa: BLE001 — never a dropped connection: a typed error event instead
            if not isinstance(exc, BatonError):
                log.exception("frame %s failed", kind)
            await self.send(self.error("execution.error" if kind in EXECUTION_FRAMES else "dialogue.error", exc, client_message_id))

    def error(self, kind: str, exc: Exception, client_message_id: str | None = None) -> WsEnvelope:
        event = error_event(kind, exc, retryable=self.retryable, retry_after_s=self.serving.retry_after_s,
                            client_message_id=client_message_id)
        self.serving.metrics.errors.labels(event.payload["code"]).inc()
        return event


def error_event(kind: str, exc: Exception, *, retryable: tuple[type[BatonError], ...], retry_after_s: int,
                client_message_id: str | None = None) -> WsEnvelope:
    """The one mapping of a failure to the wire: a BatonError's code, message and field (and `retry_after_s` when
    retrying helps), anything else `internal_error` without its details."""
    if isinstance(exc, BatonError):
        payload = ErrorPayload(code=exc.code, message=exc.message, field=exc.field,
                               retry_after_s=retry_after_s if isinstance(exc, retryable) else None,
                               client_message_id=client_message_id)
    else:
        payload = ErrorPayload(code="internal_error", message=f"Unexpected {type(exc).__name__}; nothing was applied.",
                               client_message_id=client_message_id)
    return envelope(kind, payload)


def conversation_router(retryable: tuple[type[BatonError], ...]) -> APIRouter:
    """`retryable`: the errors answered with `retry_after_s` (the HTTP API's, which answers them with Retry-After)."""
    router = APIRouter()
    document = asyncapi_document()

    @router.get("/asyncapi.json", include_in_schema=False)
    async def asyncapi() -> JSONResponse:
        """The WebSocket protocol (AsyncAPI 3.0), next to /openapi.json."""
        return JSONResponse(document)

    @router.websocket("/ws/v1/conversation")
    async def conversation_socket(websocket: WebSocket) -> None:
        await ConversationSocket(websocket, retryable).run()

    return router

