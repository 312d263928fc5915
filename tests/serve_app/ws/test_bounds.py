"""What bounds one WebSocket user (serve_app/ws/bounds.py), on the connection itself over a scripted socket: the
per-user connection cap, the frame queue, a claimed user_id, the token's lifetime, oversize and deep frames, and
the work a connection leaves behind when it closes."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from types import SimpleNamespace
from typing import Any

import jwt
import pytest
from starlette.websockets import WebSocketState

from config.limits import LimitsConfig
from serve_app.agents.context import Caller
from serve_app.http.ratelimit import RateLimits
from serve_app.ws.bounds import UserConnections, check_user_id
from serve_app.ws.router import ConversationSocket
from tests.support.fakes import base_settings

LIMITS = LimitsConfig(max_body_bytes=4096, max_json_depth=8, ws_connections_per_user=1, ws_queued_frames=2)
USER = SimpleNamespace(id=uuid.uuid4(), business_user_id="u1")


class ScriptedSocket:
    """The parts of starlette's WebSocket the connection uses; `receive` answers from a queue."""

    def __init__(self, app: Any, query: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> None:
        self.app, self.query_params, self.headers = app, query or {"user_id": "u1"}, headers or {}
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []
        self.closed: tuple[int, str] | None = None
        self.application_state = WebSocketState.CONNECTING

    async def accept(self) -> None:
        self.application_state = WebSocketState.CONNECTED

    async def receive(self) -> dict[str, Any]:
        return await self.inbox.get()

    async def send_text(self, text: str) -> None:
        self.sent.append(json.loads(text))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self.closed = (code, reason)
        self.application_state = WebSocketState.DISCONNECTED

    def frame(self, kind: str, payload: dict[str, Any]) -> None:
        self.inbox.put_nowait({"type": "websocket.receive", "text": json.dumps({"type": kind, "payload": payload})})

    def leave(self) -> None:
        self.inbox.put_nowait({"type": "websocket.disconnect", "code": 1001})

    def codes(self) -> list[str]:
        return [event["payload"].get("code") for event in self.sent]


class Counts:
    def labels(self, code: str) -> Counts:
        return self

    def inc(self) -> None:
        pass


def app_state(connections: UserConnections | None = None) -> SimpleNamespace:
    async def of_turn(authorization: str | None, claimed: str | None) -> tuple[Any, str]:
        return USER, str(USER.id)

    settings = base_settings().model_copy(update={"limits": LIMITS})
    return SimpleNamespace(
        settings=settings,
        store=SimpleNamespace(callers=SimpleNamespace(of_turn=of_turn)),
        conversation=object(),
        engine=SimpleNamespace(pack=SimpleNamespace(name="cockpit")),  # whose conversation a connection holds
        metrics=SimpleNamespace(errors=Counts()),
        retry_after_s=1,
        ws_connections=connections or UserConnections(),
        limits=RateLimits(settings.rate_limits),
    )


def app() -> SimpleNamespace:
    return SimpleNamespace(state=SimpleNamespace())


class Blocking:
    """Each frame's work: records that it started, then waits until released (or cancelled)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled = 0
        self.release = asyncio.Event()

    def install(self, connection: ConversationSocket) -> None:
        def frame(caller: Caller, payload: Any, arrived: float):
            async def run() -> None:
                self.started.append(payload.client_message_id)
                try:
                    await self.release.wait()
                except asyncio.CancelledError:
                    self.cancelled += 1
                    raise

            return run

        connection._frame = frame  # type: ignore[method-assign]


def say(socket: ScriptedSocket, cid: str) -> None:
    socket.frame("dialogue.input", {"client_message_id": cid, "raw_content": "打开车窗"})


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_full_queue_answers_busy_and_closing_drops_what_waits_while_the_running_frame_finishes():
    socket, state, work = ScriptedSocket(app()), app_state(), Blocking()
    connection = ConversationSocket(socket, state)  # type: ignore[arg-type]
    work.install(connection)
    running = asyncio.ensure_future(connection.run())
    say(socket, "c0")
    await settle()  # c0 runs
    for cid in ("c1", "c2", "c3"):
        say(socket, cid)
    await settle()
    busy = [e for e in socket.sent if e["payload"].get("code") == "busy"]
    assert [e["payload"]["client_message_id"] for e in busy] == ["c3"], "two wait; the third is refused"
    assert busy[0]["type"] == "dialogue.error" and busy[0]["payload"]["retry_after_s"] == 1
    socket.leave()
    await asyncio.wait_for(running, 5)
    work.release.set()
    await settle()
    assert work.started == ["c0"] and work.cancelled == 0, "the running frame finished; the waiting ones never ran"


async def test_a_frame_received_before_the_client_left_runs_even_when_it_had_not_started():
    socket, state, work = ScriptedSocket(app()), app_state(), Blocking()
    connection = ConversationSocket(socket, state)  # type: ignore[arg-type]
    work.install(connection)
    work.release.set()
    say(socket, "c0")
    say(socket, "c1")
    socket.leave()  # all three are read before the worker takes the first frame
    await asyncio.wait_for(connection.run(), 5)
    await settle()
    assert work.started == ["c0"]


async def test_a_second_connection_of_a_user_over_the_cap_is_refused_typed_and_the_slot_comes_back():
    shared, state = app(), app_state(UserConnections())
    first = ScriptedSocket(shared)
    held = asyncio.ensure_future(ConversationSocket(first, state).run())  # type: ignore[arg-type]
    await settle()
    second = ScriptedSocket(shared)
    await asyncio.wait_for(ConversationSocket(second, state).run(), 5)  # type: ignore[arg-type]
    assert second.closed == (1013, "too_many_connections") and second.codes() == ["too_many_connections"]
    first.leave()
    await asyncio.wait_for(held, 5)
    third = ScriptedSocket(shared)
    again = asyncio.ensure_future(ConversationSocket(third, state).run())  # type: ignore[arg-type]
    await settle()
    assert third.closed is None, "the first one's slot was given back when it closed"
    third.leave()
    await asyncio.wait_for(again, 5)


@pytest.mark.parametrize("claimed", ["a\x00b", "x" * 129, "tab\there", ""])
async def test_a_bad_user_id_is_a_typed_refusal_before_any_lookup(claimed):
    socket, state = ScriptedSocket(app(), query={"user_id": claimed}), app_state()
    looked_up: list[str] = []

    async def of_turn(authorization: str | None, user_id: str | None) -> Any:
        looked_up.append(user_id or "")
        raise AssertionError("never reached")

    state.store.callers.of_turn = of_turn
    await asyncio.wait_for(ConversationSocket(socket, state).run(), 5)  # type: ignore[arg-type]
    assert socket.closed == (1008, "invalid_user_id") and looked_up == []
    assert socket.sent[0]["payload"]["field"] == "user_id"


def test_user_ids_within_the_rules_pass():
    for claimed in (None, "u1", "用户-42", "x" * 128):
        check_user_id(claimed)


async def test_a_socket_closes_typed_when_its_token_expires():
    token = jwt.encode({"sub": str(USER.id), "exp": int(time.time()) + 1}, "k" * 32, algorithm="HS256")
    socket = ScriptedSocket(app(), query={}, headers={"authorization": f"Bearer {token}"})
    await asyncio.wait_for(ConversationSocket(socket, app_state()).run(), 5)  # type: ignore[arg-type]
    assert socket.closed == (4401, "token_expired") and socket.codes() == ["token_expired"]


async def test_an_oversize_frame_is_refused_then_the_connection_closes():
    socket = ScriptedSocket(app())
    running = asyncio.ensure_future(ConversationSocket(socket, app_state()).run())  # type: ignore[arg-type]
    socket.frame("transport.ping", {"nonce": "x" * 70000})
    await asyncio.wait_for(running, 5)
    assert socket.codes() == ["frame_too_large"] and socket.closed == (1009, "frame_too_large")


async def test_a_deep_frame_is_answered_and_the_connection_stays():
    socket = ScriptedSocket(app())
    running = asyncio.ensure_future(ConversationSocket(socket, app_state()).run())  # type: ignore[arg-type]
    socket.inbox.put_nowait({"type": "websocket.receive", "text": "[" * 60000})
    socket.frame("transport.ping", {"nonce": "n1"})
    await settle()
    assert socket.codes()[0] == "json_too_deep" and socket.sent[1]["payload"]["nonce"] == "n1"
    socket.leave()
    await asyncio.wait_for(running, 5)


def test_connections_are_counted_per_user():
    held, a, b = UserConnections(), uuid.uuid4(), uuid.uuid4()
    assert held.enter(a, 2) and held.enter(a, 2) and not held.enter(a, 2) and held.enter(b, 2)
    held.leave(a)
    assert held.held(a) == 1 and held.enter(a, 2)
