"""Plain ASGI middleware (Starlette's `@app.middleware("http")` costs a task and two streams per request): the
arrival stamp every deadline starts from, the browser guard (Host and Origin), the admission gate in front of the
turn routes, the replica's name."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import BatonError, Overloaded
from protocol.base import ErrorBody, ErrorEnvelope
from serve_app.http.browsers import BrowserPolicy, HostNotAllowed, OriginNotAllowed
from serve_app.state import state_of

TURN_PATHS = frozenset({"/api/v1/agent/chat", "/api/v1/agent/fill-slots", "/api/v1/agent/chat-stream"})
REPLICA_HEADER = "X-Baton-Replica"


def route_path(scope: Scope) -> str:
    """The request's path inside the app: Serve mounts an app served under a route prefix (`/cockpit`) at that
    `root_path` and leaves `path` whole, as ASGI servers do; the routes match what follows it."""
    path, root = str(scope["path"]), str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


class ArrivalStamp:
    """Outermost: notes when each request arrived (epoch seconds) in `request.state.arrived`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope.setdefault("state", {})["arrived"] = time.time()
        await self.app(scope, receive, send)


async def _send_error(send: Send, status: int, exc: BatonError) -> None:
    body = (
        ErrorEnvelope(error=ErrorBody(code=exc.code, message=exc.message, field=exc.field)).model_dump_json().encode()
    )
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BrowserGuard:
    """What a web page the operator happens to visit cannot do (`serve_app.http.browsers`): in the local mode, reach
    the app under a name that is not its own (DNS rebinding: 421); in any mode, open the WebSocket (closed at once
    with 1008 and the error's code as reason) or send a state-changing request (403) from another origin. A request
    with no Origin header is no browser's and passes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._policy: BrowserPolicy | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self._policy is None:
            self._policy = BrowserPolicy(state_of(scope["app"]).settings.auth)
        try:
            self._policy.check(scope)
        except (HostNotAllowed, OriginNotAllowed) as exc:
            state_of(scope["app"]).metrics.errors.labels(exc.code).inc()
            if scope["type"] == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.accept"})
                await send({"type": "websocket.close", "code": POLICY_VIOLATION, "reason": exc.code})
            else:
                await _send_error(send, 421 if isinstance(exc, HostNotAllowed) else 403, exc)
            return
        await self.app(scope, receive, send)


POLICY_VIOLATION = 1008


class AdmissionGate:
    """Sheds a turn the admission would refuse before its body is read or validated: under a burst, most
    requests are sheds, and every millisecond one costs is taken from the turns being answered. (The turn
    runner checks again with the turn's own modality.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and route_path(scope) in TURN_PATHS:
            state = state_of(scope["app"])
            try:
                state.turns.admit("text")
            except Overloaded as exc:
                state.metrics.errors.labels(Overloaded.code).inc()
                body = (
                    ErrorEnvelope(error=ErrorBody(code=Overloaded.code, message=exc.message)).model_dump_json().encode()
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 503,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"retry-after", str(state.retry_after_s).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class ReplicaName:
    """Names the replica that answered in `REPLICA_HEADER` (sessions are shared, so a conversation may move between
    replicas)."""

    def __init__(self, app: ASGIApp, name: str) -> None:
        self.app = app
        self._header = (REPLICA_HEADER.lower().encode(), name.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), self._header]}
            await send(message)

        await self.app(scope, receive, named)
