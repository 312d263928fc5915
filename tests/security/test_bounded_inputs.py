"""Bounded inputs against the served app (Ray Serve + PostgreSQL): every body, frame and connection a client can send
is bounded, and each refusal is typed (the error envelope, or a WebSocket event and close code) — never a 500, a
RecursionError or a dropped connection (issue 34, items 7 and 9; docs/security.md, Bounded inputs)."""

from __future__ import annotations

import json
import time
import uuid
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

OVER_THE_BODY_LIMIT = 3 * 2**20  # limits.max_body_bytes is 2 MiB
CONNECTIONS_PER_USER = 8  # limits.ws_connections_per_user, per Orchestrator replica
REPLICAS = 2
QUEUED_FRAMES = 16  # limits.ws_queued_frames


@pytest.fixture(scope="module")
def http(serve_app: dict[str, Any]) -> httpx.Client:
    with httpx.Client(base_url=serve_app["url"], timeout=60) as client:
        yield client


def socket(serve_app: dict[str, Any], user_id: str) -> ClientConnection:
    url = serve_app["url"].replace("http://", "ws://") + "/ws/v1/conversation?user_id=" + user_id
    return connect(url, open_timeout=20, max_size=2**22)


def event(ws: ClientConnection, timeout: float = 20) -> dict[str, Any]:
    return json.loads(ws.recv(timeout=timeout))


def closed_with(ws: ClientConnection, timeout: float = 20) -> tuple[int | None, str | None]:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=timeout)
    return close_of(closed.value)


def close_of(exc: ConnectionClosed) -> tuple[int | None, str | None]:
    return (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (None, None)


def envelope(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text[:300]
    error = resp.json()["error"]
    assert error["code"] == code and error["message"]
    return error


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/agent/chat",
        "/api/v1/agent/fill-slots",
        "/api/v1/agent/chat-stream",
        "/api/v1/write-requests",
        "/v1/chat/completions",
    ],
)
def test_an_oversize_body_is_refused_413_with_the_envelope(http, path):
    body = json.dumps({"user_id": "big", "text": "开" * 10, "pad": "x" * OVER_THE_BODY_LIMIT})
    resp = http.post(path, content=body, headers={"content-type": "application/json"})
    assert "2097152 bytes" in envelope(resp, 413, "body_too_large")["message"]


def test_a_mebibyte_of_nesting_answers_400_with_the_envelope(http):
    for path in ("/api/v1/agent/chat", "/v1/chat/completions"):
        resp = http.post(path, content=b"[" * 2**20, headers={"content-type": "application/json"})
        envelope(resp, 400, "json_too_deep")


def test_an_over_long_text_is_refused_by_its_field_before_any_row_exists(http):
    session = f"long-{uuid.uuid4().hex[:8]}"
    refused = http.post("/api/v1/agent/chat", json={"user_id": "long-a", "session_id": session, "text": "开" * 2001})
    error = envelope(refused, 422, "text_too_long")
    assert error["field"] == "text" and "2000" in error["message"]
    # the refused turn left no session behind: another user may take its id (before, it answered 403)
    taken = http.post("/api/v1/agent/chat", json={"user_id": "long-b", "session_id": session, "text": "打开车窗"})
    assert taken.status_code == 200, taken.text[:300]


def test_slots_over_their_bounds_are_refused_by_field(http):
    slots = {f"k{i}": i for i in range(33)}
    resp = http.post("/api/v1/agent/fill-slots", json={"user_id": "slots", "session_id": "s", "slots": slots})
    assert envelope(resp, 422, "object_too_large")["field"] == "slots"


def test_an_oversize_frame_is_refused_typed_and_its_connection_closed(serve_app):
    with socket(serve_app, "ws-big") as ws:
        ws.send(json.dumps({"type": "transport.ping", "payload": {"nonce": "x" * 100_000}}))
        refused = event(ws)
        assert refused["type"] == "dialogue.error" and refused["payload"]["code"] == "frame_too_large"
        assert closed_with(ws) == (1009, "frame_too_large")


def test_a_deep_frame_is_refused_typed_and_the_connection_stays(serve_app):
    with socket(serve_app, "ws-deep") as ws:
        ws.send("[" * 60_000)
        assert event(ws)["payload"]["code"] == "json_too_deep"
        ws.send(json.dumps({"type": "transport.ping", "payload": {"nonce": "n1"}}))
        assert event(ws)["payload"]["nonce"] == "n1"


@pytest.mark.parametrize("claimed", ["a%00b", "x" * 129])
def test_a_bad_user_id_is_a_typed_refusal_not_a_database_error(serve_app, claimed):
    with socket(serve_app, claimed) as ws:
        refused = event(ws)
        assert refused["payload"]["code"] == "invalid_user_id" and refused["payload"]["field"] == "user_id"
        assert closed_with(ws) == (1008, "invalid_user_id")


def test_connections_per_user_are_capped_with_a_typed_close(serve_app):
    user = f"many-{uuid.uuid4().hex[:8]}"
    # one more than every replica's cap together: at least one replica meets one too many
    with ExitStack() as held:
        sockets = [held.enter_context(socket(serve_app, user)) for _ in range(CONNECTIONS_PER_USER * REPLICAS + 1)]
        refusals = []
        for ws in sockets:
            try:
                ws.send(json.dumps({"type": "transport.ping", "payload": {"nonce": "n"}}))
                answer = event(ws)
            except ConnectionClosed as exc:  # closed before the ping went out
                refusals.append(close_of(exc))
                continue
            if answer["type"] == "dialogue.error":
                assert answer["payload"]["code"] == "too_many_connections"
                refusals.append(closed_with(ws))
        assert refusals and set(refusals) == {(1013, "too_many_connections")}
    answers = []
    for _ in range(5):  # closing gave the slots back (each once its server side has seen the close)
        with socket(serve_app, user) as again:
            again.send(json.dumps({"type": "transport.ping", "payload": {"nonce": "back"}}))
            answers.append(event(again)["payload"])
        if answers[-1].get("nonce") == "back":
            break
        time.sleep(0.5)
    assert answers[-1].get("nonce") == "back", answers


def test_a_burst_over_the_queue_is_answered_busy(serve_app):
    burst = QUEUED_FRAMES * 3
    with socket(serve_app, f"burst-{uuid.uuid4().hex[:8]}") as ws:
        for _ in range(burst):
            ws.send(json.dumps({"type": "selection.cancel", "payload": {"interaction_id": str(uuid.uuid4())}}))
        codes = [event(ws, timeout=60)["payload"]["code"] for _ in range(burst)]
    assert "busy" in codes, codes
    assert set(codes) <= {"busy", "not_found"}
