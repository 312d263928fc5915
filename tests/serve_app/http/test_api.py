"""The HTTP layer around the engine (no Ray): admission control sheds with 503 + Retry-After, metrics count turns."""

from __future__ import annotations

import asyncio
import time

import httpx

from engine.deadline import Deadline
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.turn_debug import Timings
from serve_app.metrics import TurnMetrics
from serve_app.state import state_of
from serve_app.turns.admission import Admission
from tests.support.fakes import ONE_AT_A_TIME, api_for, base_settings


class HeldEngine:
    """Stands in for TurnEngine: each chat waits until released, so turns stay in flight."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.pack = type("P", (), {"name": "stub"})()

    def deadline(self, modality: str, *, arrived: float | None = None) -> Deadline:
        return Deadline(600, started=arrived or time.time())

    def admission_ms(self, modality: str) -> float:
        return 600.0

    async def chat(self, body, *, deadline: Deadline, listener=None) -> ChatResponse:
        await self.release.wait()
        return ChatResponse(
            session_id="s",
            reply="ok",
            status=TurnStatus.completed,
            intent="x",
            timings=Timings(stages={"classifier": 12.0}, total_ms=20.0, budget_ms=600, degraded=["detector"]),
        )


def _value(metrics: TurnMetrics, name: str, labels: dict | None = None) -> float:
    return metrics.registry.get_sample_value(name, labels or {}) or 0.0


async def test_turns_over_the_limit_are_shed_with_retry_after_and_counted():
    engine, metrics = HeldEngine(), TurnMetrics()
    settings = base_settings()
    settings = settings.model_copy(update={"serving": settings.serving.model_copy(update={"retry_after_s": 2})})
    api = api_for(engine, settings, admission=Admission(ONE_AT_A_TIME), metrics=metrics)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://localhost") as client:
        first = asyncio.create_task(client.post("/api/v1/agent/chat", json={"user_id": "u", "text": "a"}))
        while state_of(api).admission.in_flight == 0:
            assert not first.done(), first.result().text  # the first turn must still be in flight
            await asyncio.sleep(0.01)
        shed = await client.post("/api/v1/agent/chat", json={"user_id": "u", "text": "b"})
        assert shed.status_code == 503 and shed.headers["retry-after"] == "2"
        assert shed.json()["error"]["code"] == "overloaded"
        engine.release.set()
        assert (await first).status_code == 200
        again = await client.post("/api/v1/agent/chat", json={"user_id": "u", "text": "c"})
        assert again.status_code == 200
    assert state_of(api).admission.in_flight == 0
    assert _value(metrics, "baton_shed_turns_total") == 1
    assert _value(metrics, "baton_turns_total", {"status": "completed"}) == 2
    assert _value(metrics, "baton_degraded_stages_total", {"stage": "detector"}) == 2
    assert _value(metrics, "baton_stage_latency_ms_count", {"stage": "classifier"}) == 2
    assert _value(metrics, "baton_errors_total", {"code": "overloaded"}) == 1


async def test_store_routes_without_a_database_answer_503_with_the_envelope():
    api = api_for(HeldEngine(), base_settings(), admission=Admission(ONE_AT_A_TIME))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://localhost") as client:
        resp = await client.get("/api/v1/auth/me", headers={"Authorization": "Bearer x"})
    assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
    assert resp.json()["error"]["code"] == "store_unavailable"


async def test_every_response_names_the_replica_that_answered():
    api = api_for(HeldEngine(), base_settings(), replica="orchestrator-7")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://localhost") as client:
        health = await client.get("/health")
        missing = await client.get("/nope")
    assert health.headers["x-baton-replica"] == missing.headers["x-baton-replica"] == "orchestrator-7"
