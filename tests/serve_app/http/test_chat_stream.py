"""POST /api/v1/agent/chat-stream over the real engine (fake models, no Ray): NDJSON events from the execution."""

from __future__ import annotations

import json

import httpx

from config.serving import AdmissionConfig
from serve_app.turns.admission import Admission
from tests.support.fakes import FakeModelClient, Rig, api_for

ADMIT = AdmissionConfig(
    max_in_flight_turns=8, headroom=1.0, drift=0.002, smoothing=0.05, stale_s=5, min_samples=3, outlier=3
)


def rig() -> Rig:
    fake = (
        FakeModelClient()
        .on("打开车窗", classifier=[("cabin_window_open", 0.95)])
        .on("把空调调到22度", classifier=[("cabin_set_ac", 0.9)])
        .sure("你在吗朋友", "__out_of_scope__")
    )
    return Rig(models=fake)


def client(r: Rig, admission: Admission | None = None) -> httpx.AsyncClient:
    api = api_for(r.engine, admission=admission or Admission(ADMIT))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://localhost")


async def test_a_workflow_streams_ack_then_each_step_then_the_final_response():
    r = rig()
    async with client(r) as c:
        resp = await c.post(
            "/api/v1/agent/chat-stream",
            json={"user_id": "u1", "session_id": "s1", "text": "打开车窗然后把空调调到22度"},
        )
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
        events = [json.loads(line) for line in resp.text.splitlines()]
    assert [e["event"] for e in events] == ["ack", "step", "step", "final"]
    assert events[0]["workflow"]["steps"][0]["status"] == "pending", "the ack comes before any plugin ran"
    assert [e["step"]["intent_id"] for e in events[1:3]] == ["cabin_window_open", "cabin_set_ac"]
    assert all(e["step"]["status"] == "done" for e in events[1:3])
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["workflow"]["status"] == "completed"
    assert r.vehicle().temperature == 22


async def test_a_turn_that_runs_no_plugin_streams_only_its_final_response():
    async with client(rig()) as c:
        resp = await c.post("/api/v1/agent/chat-stream", json={"user_id": "u1", "text": "你在吗朋友"})
    events = [json.loads(line) for line in resp.text.splitlines()]
    assert [e["event"] for e in events] == ["final"] and events[0]["response"]["status"] == "rejected"


async def test_bad_input_and_overload_get_their_http_status_not_a_stream():
    r = rig()
    async with client(r) as c:
        bad = await c.post("/api/v1/agent/chat-stream", json={"user_id": "u1", "text": "   "})
        assert bad.status_code == 422 and bad.json()["error"] == {
            "code": "invalid_input",
            "field": "text",
            "message": "Field 'text' must not be empty or whitespace.",
        }
        missing = await c.post("/api/v1/agent/chat-stream", json={"text": "打开车窗"})
        assert missing.status_code == 422 and missing.json()["error"]["field"] == "user_id"
    full = Admission(ADMIT.model_copy(update={"max_in_flight_turns": 1}))
    full.in_flight = 1
    async with client(r, full) as c:
        shed = await c.post("/api/v1/agent/chat-stream", json={"user_id": "u1", "text": "打开车窗"})
    assert shed.status_code == 503 and shed.headers["retry-after"] and shed.json()["error"]["code"] == "overloaded"
