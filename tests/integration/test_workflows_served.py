"""Workflows on the real app (Ray Serve, two orchestrator replicas, PostgreSQL), over plain HTTP."""

from __future__ import annotations

import json
import time

import pytest

from serve_app.http.middleware import REPLICA_HEADER
from serve_app.ops import launcher
from tests.support.http_client import served_client
from tests.support.serving import until_fault_shows

CHAT, FILL, STREAM = "/api/v1/agent/chat", "/api/v1/agent/fill-slots", "/api/v1/agent/chat-stream"
PENDING = ("A12345", "C2024", "A10002", "A20003")  # sha256(id) % 3 -> pending_shipment
MARGIN_MS = 50


@pytest.fixture(scope="module")
def client(serve_app):
    with served_client(serve_app["url"], 10.0) as c:
        yield c


def test_a_conditional_workflow_paused_on_one_replica_completes_on_the_other(client):
    """The workflow lives in the session row: the confirmation may land on either orchestrator replica."""
    for attempt in range(12):
        user, order = f"wf-replica-{attempt}", PENDING[attempt % len(PENDING)]
        asked = client.post(CHAT, json={"user_id": user, "text": f"查一下订单{order}，如果还没发货就帮我取消"})
        body = asked.json()
        assert body["status"] == "waiting_confirmation", body
        assert [s["status"] for s in body["workflow"]["steps"]] == ["done", "waiting_confirmation"]
        done = client.post(CHAT, json={"user_id": user, "session_id": body["session_id"], "text": "确认"})
        if done.headers[REPLICA_HEADER] == asked.headers[REPLICA_HEADER]:
            continue
        result = done.json()
        assert result["status"] == "completed", result
        assert [s["status"] for s in result["workflow"]["steps"]] == ["done", "done"]
        assert result["workflow"]["step_results"]["s2"]["order_status"] == "cancelled"
        again = client.post(CHAT, json={"user_id": user, "text": f"查一下订单{order}"}).json()
        assert again["result"]["data"]["order_status"] == "cancelled", "the cancel was committed to the user's orders"
        return
    pytest.fail("twelve resumes all landed on the replica that paused the workflow")


def test_a_slot_paused_workflow_resumes_through_fill_slots(client):
    asked = client.post(CHAT, json={"user_id": "wf-fill", "text": "打开车窗然后导航"}).json()
    assert asked["status"] == "waiting_slot" and asked["pending_slots"] == ["destination"]
    done = client.post(
        FILL, json={"user_id": "wf-fill", "session_id": asked["session_id"], "text": "去人民广场"}
    ).json()
    assert done["status"] == "completed" and done["workflow"]["steps"][1]["slots"]["destination"] == "人民广场"


def test_chat_stream_sends_the_ack_before_the_first_plugin_result_then_the_final_response(serve_app):
    with (
        served_client(serve_app["url"], 10.0) as c,
        c.stream("POST", STREAM, json={"user_id": "wf-stream", "text": "打开车窗然后把空调调到22度"}) as resp,
    ):
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
        events = [json.loads(line) for line in resp.iter_lines() if line]
    assert [e["event"] for e in events] == ["ack", "step", "step", "final"]
    assert [e["step"]["intent_id"] for e in events[1:3]] == ["cabin_window_open", "cabin_set_ac"]
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["timings"]["degraded"] == []


def test_chat_stream_bad_input_is_a_typed_error_not_a_stream(client):
    resp = client.post(STREAM, json={"user_id": "wf-stream", "text": ""})
    assert resp.status_code == 422 and resp.json()["error"]["field"] == "text"


def test_a_slowed_planner_degrades_inside_the_budget(serve_app, client):
    launcher.set_faults(serve_app["config"], "planner:delay_ms=400")
    try:
        body, wall_ms = until_fault_shows(
            lambda: client.post(CHAT, json={"user_id": "wf-fault", "text": "打开车窗然后把空调调到22度"}).json(),
            lambda b: "planner" in b["timings"]["degraded"],
        )
        assert body["timings"]["degraded"] == ["planner"], body["timings"]
        assert wall_ms <= body["timings"]["budget_ms"] + MARGIN_MS
        assert body["workflow"] is None and body["routing_debug"]["planner"]["degraded"] is True
    finally:
        launcher.set_faults(serve_app["config"], "")
    time.sleep(0.5)
