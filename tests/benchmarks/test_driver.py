"""The driver against a tiny fake server (no Ray): follow-ups carry the session, a shed ends the conversation,
warm-up is marked."""

from __future__ import annotations

import socket

import pytest
from aiohttp import web

from benchmarks.driver import LOST, Sample, run_window, shed_backoff_s
from benchmarks.scenario import Arrival, Load, Mix


def _mix() -> Mix:
    return Mix.model_validate(
        {
            "pack": "cockpit",
            "kinds": {
                "slot_filling": {
                    "weight": 1,
                    "conversations": [["帮我导航", {"endpoint": "fill_slots", "text": "去机场"}, "好的"]],
                }
            },
        }
    )


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
async def fake_baton():
    """Answers like Baton; every user's third turn is shed with 503 + Retry-After, and 'bare' gets a non-JSON 503."""
    seen: list[tuple[str, dict]] = []

    async def turn(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((request.path, body))
        turns = sum(1 for _, b in seen if b["user_id"] == body["user_id"])
        if turns == 3:
            return web.json_response(
                {"error": {"code": "overloaded", "message": "busy", "field": None}},
                status=503,
                headers={"Retry-After": "1"},
            )
        return web.json_response(
            {
                "session_id": body.get("session_id") or f"s-{body['user_id']}",
                "status": "completed",
                "timings": {
                    "stages": {"classifier": 12.5, "keyword": 0.1},
                    "total_ms": 15.0,
                    "budget_ms": 600,
                    "degraded": [],
                },
            }
        )

    app = web.Application()
    app.router.add_post("/api/v1/agent/chat", turn)
    app.router.add_post("/api/v1/agent/fill-slots", turn)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_open_loop_conversations(fake_baton):
    url, seen = fake_baton
    load = Load(levels=[30], ramp_up_s=0, warmup_s=0.3, duration_s=0.7)
    window = await run_window(url, mix=_mix(), load=load, arrival=Arrival(), level=30, seed=1, timeout_s=5)

    assert window.sent_conversations > 3
    assert len(window.samples) == 3 * window.sent_conversations
    first, follow, third = (
        sorted((s for s in window.samples if s.turn == i), key=lambda s: s.t_send) for i in range(3)
    )
    assert all(s.status == 200 and s.stages["classifier"] == 12.5 for s in first + follow)
    assert all(s.status == 503 and s.retry_after == "1" and s.error_code == "overloaded" for s in third)
    assert {s.endpoint for s in follow} == {"fill_slots"}
    # every follow-up carried the session id its conversation's first answer returned
    followups = [b for path, b in seen if path.endswith("fill-slots")]
    assert followups and all(b["session_id"] == f"s-{b['user_id']}" for b in followups)
    assert any(s.warmup for s in window.samples) and any(not s.warmup for s in window.samples)
    assert window.wall_s > 0 and window.cpu_s >= 0


async def test_unreachable_server_counts_as_lost():
    load = Load(levels=[60], ramp_up_s=0, warmup_s=0, duration_s=1.0)
    window = await run_window(
        f"http://127.0.0.1:{_port()}", mix=_mix(), load=load, arrival=Arrival(), level=60, seed=2, timeout_s=2
    )
    assert window.samples and all(s.status == LOST and s.error_code for s in window.samples)
    assert window.abandoned_turns == 2 * len(window.samples)


async def test_closed_loop_keeps_n_sessions_busy(fake_baton):
    url, _ = fake_baton
    load = Load(levels=[3], ramp_up_s=0, warmup_s=0, duration_s=0.3)
    window = await run_window(
        url, mix=_mix(), load=load, arrival=Arrival(process="closed"), level=3, seed=3, timeout_s=5
    )
    assert window.process == "closed" and window.sent_conversations >= 3


def test_shed_backoff_follows_retry_after_within_limits():
    def s(status, retry_after=None):
        return Sample(
            kind="k", turn=0, endpoint="chat", t_send=0, wall_ms=1, status=status, warmup=False, retry_after=retry_after
        )

    assert shed_backoff_s(s(503, "2")) == 2.0 and shed_backoff_s(s(429, "60")) == 5.0
    assert shed_backoff_s(s(503)) == 1.0 and shed_backoff_s(s(503, "soon")) == 1.0
    assert shed_backoff_s(s(200)) == 0.0 and shed_backoff_s(s(LOST)) == 0.0 and shed_backoff_s(None) == 0.0


async def test_a_shed_closed_loop_session_waits_its_retry_after(fake_baton):
    url, seen = fake_baton
    load = Load(levels=[1], ramp_up_s=0, warmup_s=0, duration_s=0.6)
    window = await run_window(
        url, mix=_mix(), load=load, arrival=Arrival(process="closed"), level=1, seed=3, timeout_s=5
    )
    # one session: two answered turns, the third shed with Retry-After 1 → it sleeps out the window instead of retrying
    assert [s.status for s in window.samples] == [200, 200, 503]
    assert window.sent_conversations == 1 and len(seen) == 3
