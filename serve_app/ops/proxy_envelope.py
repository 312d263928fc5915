"""ASGI middleware for Ray Serve's HTTP proxy: a request the proxy rejects itself gets Baton's error envelope.

Under a burst the proxy sheds what the Orchestrator's bounded queue cannot take (`max_queued_requests`,
with `backpressure_config` adding `Retry-After`) before any Baton code runs. Its body is plain text; this
middleware rewrites such 429/503 answers into `{"error": {"code", "message", "field"}}` and keeps the
status and `Retry-After`, so clients see one error shape whoever shed the request. Installed through
`RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH` (see `serve_app.ops.launcher`).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CALLBACK = "serve_app.ops.proxy_envelope:proxy_middlewares"
SHED_STATUSES = (429, 503)


def _envelope(status: int, proxy_text: str) -> bytes:
    overloaded = status == 429 or "backpressure" in proxy_text
    code = "overloaded" if overloaded else "unavailable"
    message = (
        "Baton is at capacity; retry after the time in Retry-After."
        if overloaded
        else f"The service is not available right now: {proxy_text.strip() or 'no replica is ready'}"
    )
    return json.dumps({"error": {"code": code, "message": message, "field": None}}).encode()


class ProxyShedEnvelope:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}

        async def send_enveloped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if message["status"] in SHED_STATUSES and not headers.get(b"content-type", b"").startswith(
                    b"application/json"
                ):
                    held["start"], held["body"] = message, b""  # hold until the proxy's whole text is in
                    return
            elif message["type"] == "http.response.body" and "start" in held:
                held["body"] += message.get("body", b"")
                if message.get("more_body"):
                    return
                start = held.pop("start")
                body = _envelope(start["status"], held["body"].decode("utf-8", "replace"))
                kept = [(k, v) for k, v in start.get("headers", []) if k not in (b"content-type", b"content-length")]
                await send(
                    {
                        **start,
                        "headers": kept
                        + [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, send_enveloped)


def proxy_middlewares() -> list[Middleware]:
    return [Middleware(ProxyShedEnvelope)]
