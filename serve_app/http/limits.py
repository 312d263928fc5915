"""Bounded request bodies, as plain ASGI middleware in front of every route: a body over `limits.max_body_bytes` is
refused with 413 before it is read (by its Content-Length, or the moment its chunks pass the limit), and a JSON
body nesting deeper than `limits.max_json_depth` with 400 before anything parses it (Python's parser recurses, and
1 MiB of `[` would be a RecursionError). Media uploads stream under their own per-kind limit (serve_app.http.media).

It also binds the app's `max_text_chars` for the wire models (protocol.limits.text_limit) on every request and
WebSocket connection, so an over-long text is refused while its body is validated."""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from protocol.limits import text_limit
from serve_app.errors import error_response
from serve_app.http.middleware import route_path
from serve_app.state import state_of

# multipart, capped while the form is read (media.max_bytes, calendar.max_upload_bytes)
UPLOAD_PATHS = frozenset({"/api/v1/media/upload", "/api/v1/calendar/imports"})
BODY_TOO_LARGE = "body_too_large"
JSON_TOO_DEEP = "json_too_deep"
# a JSON string (an unterminated one runs to the end, so no start is scanned twice) or a bracket
_TOKENS = re.compile(rb'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)


def too_deep(body: bytes, max_depth: int) -> bool:
    """Whether `body`'s arrays and objects nest deeper than `max_depth`, brackets inside strings not counted; one
    pass, stopping at the first level too deep."""
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return False
    depth = 0
    for token in _TOKENS.finditer(body):
        bracket = token.group()
        if bracket in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return True
        elif bracket in (b"]", b"}"):
            depth = max(depth - 1, 0)
    return False


class BodyLimits:
    """Reads a request's body whole, within its limit, before the app sees it (a route parses it whole anyway),
    then hands it on; refuses what is over a limit with the error envelope."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        settings = state_of(scope["app"]).settings
        bound = text_limit.set(settings.max_text_chars)
        try:
            if scope["type"] == "http" and route_path(scope) not in UPLOAD_PATHS:
                await self._bounded(scope, receive, send)
            else:
                await self.app(scope, receive, send)
        finally:
            text_limit.reset(bound)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = state_of(scope["app"])
        limits = state.settings.limits
        limit = limits.max_body_bytes
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await self._refuse(scope, receive, send, 413, f"The request body is {declared.decode('latin-1')} bytes")
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its body was complete: nothing to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._refuse(scope, receive, send, 413, f"The request body passed {limit} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if too_deep(body, limits.max_json_depth):
            await self._refuse(scope, receive, send, 400, "")
            return
        await self.app(scope, _replay(body, receive), send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, said: str) -> None:
        state = state_of(scope["app"])
        limits = state.settings.limits
        if status == 413:
            code, message = BODY_TOO_LARGE, f"{said}; a request body may hold at most {limits.max_body_bytes} bytes."
        else:
            code, message = JSON_TOO_DEEP, f"The JSON body nests deeper than {limits.max_json_depth} levels."
        state.metrics.errors.labels(code).inc()
        # the rest of an oversize body is not read: the connection closes after the answer
        headers = {"Connection": "close"} if status == 413 else None
        await error_response(status, code, message, headers=headers)(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body read already, as one message; then the connection's own messages (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
