"""Deadline and degradation: a late stage is cancelled, raises StageTimeout, and the turn still answers in budget."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC

import pytest

from config.budgets import STAGES
from engine.deadline import Deadline, StageTimeout
from protocol.http_chat import ChatRequest, TurnStatus
from tests.support.fakes import FakeModelClient, Rig, with_budgets

SLOW = 5.0  # seconds a "hung" fake stage would sleep; every test must finish far sooner
HEADS = ["classifier", "detector", "retriever"]


class Sleeper:
    """A cancellable piece of work that records whether it was cancelled."""

    def __init__(self, seconds: float, result: str = "done") -> None:
        self.seconds, self.result, self.cancelled, self.started = seconds, result, False, False

    async def __call__(self) -> str:
        self.started = True
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return self.result


async def test_stage_slower_than_budget_raises_stage_timeout_and_cancels_the_call() -> None:
    work, deadline = Sleeper(SLOW), Deadline(budget_ms=1000)
    t0 = time.perf_counter()
    with pytest.raises(StageTimeout) as err:
        await deadline.run("classifier", 0.05, work)
    elapsed = time.perf_counter() - t0
    assert err.value.stage == "classifier" and "50 ms" in str(err.value)
    assert work.cancelled, "the awaited call must observe CancelledError"
    assert 0.04 <= elapsed < 0.5
    assert 40 <= deadline.stages_ms["classifier"] < 500


async def test_stage_within_budget_returns_its_result_and_records_its_span() -> None:
    deadline = Deadline(budget_ms=1000)
    assert await deadline.run("retriever", 0.5, Sleeper(0.01, "ok")) == "ok"
    start, end = deadline.spans_ms["retriever"]
    assert 0 <= start < end and end - start == pytest.approx(deadline.stages_ms["retriever"], abs=1.0)
    assert deadline.stages_ms["retriever"] >= 5


async def test_stage_timeout_is_bounded_by_the_time_left_in_the_turn() -> None:
    work, deadline = Sleeper(SLOW), Deadline(budget_ms=60)
    t0 = time.perf_counter()
    with pytest.raises(StageTimeout):
        await deadline.run("detector", 10.0, work)
    assert time.perf_counter() - t0 < 0.5, "a 10 s stage budget must be capped by the 60 ms turn deadline"
    assert work.cancelled


async def test_expired_deadline_does_not_start_the_stage() -> None:
    work, deadline = Sleeper(0.0), Deadline(budget_ms=0)
    await asyncio.sleep(0.001)
    with pytest.raises(StageTimeout):
        await deadline.run("classifier", 1.0, work)
    assert not work.started
    assert deadline.remaining_s() == 0.0


async def test_model_stages_leave_the_commits_reserve_but_a_final_phase_may_use_it() -> None:
    deadline = Deadline(budget_ms=200, reserve_ms=150)
    assert deadline.timeout_for(1.0) == pytest.approx(0.05, abs=0.01)
    assert deadline.timeout_for(1.0, final=True) == pytest.approx(0.2, abs=0.01)
    assert deadline.stage_at(1.0) == pytest.approx(deadline.work_at)
    with pytest.raises(StageTimeout):
        await deadline.run("encoder", 1.0, Sleeper(0.1))  # 100 ms > the 50 ms models may use
    async with deadline.phase("commit", 1.0, final=True):
        await asyncio.sleep(0.05)  # the reserve is there for the commit
    assert deadline.stages_ms["commit"] >= 45


def test_deadline_bookkeeping() -> None:
    deadline = Deadline(budget_ms=600, started=1000.0)
    assert deadline.at == pytest.approx(1000.6)
    deadline.degrade("classifier")
    deadline.degrade("classifier")
    deadline.degrade("retriever")
    assert deadline.degraded == ["classifier", "retriever"]
    deadline.record("store", 1000.010, 1000.015)
    deadline.record("store", 1000.100, 1000.102)
    assert deadline.stages_ms["store"] == pytest.approx(7.0)
    assert deadline.spans_ms["store"] == pytest.approx([10.0, 102.0])


async def test_slow_classifier_degrades_alone_and_turn_executes_on_keyword_plus_retriever() -> None:
    settings = with_budgets(turn_ms=400, classifier=60)
    fake = FakeModelClient(delays={"classifier": SLOW})
    # the classifier would have pointed elsewhere; it must not count since it never answers in time
    fake.on(
        "打开车窗",
        classifier=[("cabin_window_close", 0.99)],
        retriever=[("cabin_window_open", 0.9)],
        detector=[("cabin_window_open", 0.95)],
    )
    rig = Rig(models=fake, settings=settings)

    t0 = time.perf_counter()
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    wall_ms = (time.perf_counter() - t0) * 1000
    await asyncio.sleep(0)  # the cancelled work notices on its next step

    assert resp.timings.degraded == ["classifier"]
    assert fake.cancelled == ["classifier"]
    assert resp.status == TurnStatus.completed and resp.intent == "cabin_window_open"
    assert rig.vehicle("u1").window_open is True
    stages = resp.routing_debug.stages
    assert stages["classifier"].degraded is True and "deadline" in (stages["classifier"].error or "")
    assert stages["classifier"].candidates == []
    fusion = resp.routing_debug.fusion
    assert fusion is not None and fusion.decision == "execute"
    assert "keyword+retriever" in fusion.reason
    assert [c.intent for c in fusion.ranked] == ["cabin_window_open"]
    # keyword 1.15*1.0 + bonus 0.25, retriever 0.75*0.9 + bonus 0.25
    assert fusion.top_score == pytest.approx(1.15 + 0.25 + 0.675 + 0.25)
    assert resp.timings.budget_ms == 400
    assert resp.timings.total_ms < 400 and wall_ms < 400
    # the classifier was waited for up to the models' share of the turn (400 ms less the 40 ms commit reserve)
    assert 340 <= resp.timings.spans_ms["classifier"][1] < 400
    assert set(resp.timings.stages) <= set(STAGES)


async def test_a_late_encoder_degrades_every_head_that_reads_it_at_once() -> None:
    """The heads do not wait out their own budgets after the encoder missed: the call is cancelled."""
    settings = with_budgets(turn_ms=4000, encoder=80, classifier=2000, detector=2000, retriever=2000)
    fake = FakeModelClient(delays={"encoder": SLOW}).sure("打开车窗", "cabin_window_open")
    rig = Rig(models=fake, settings=settings)
    t0 = time.perf_counter()
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    assert (time.perf_counter() - t0) < 1.0, "the heads waited out their own 2 s budgets"
    assert resp.timings.degraded == ["encoder", *HEADS]
    assert "encoder" in fake.cancelled
    # keyword alone (1.4) is below the execute threshold: nothing is executed, the candidate is offered
    assert resp.status == TurnStatus.clarify and rig.vehicle("u1").window_open is False


async def test_turn_deadline_caps_every_model_stage() -> None:
    """Stage budgets exceed a 120 ms turn: the model call is cut at the turn deadline (less the commit's reserve)."""
    fake = FakeModelClient(delays={s: SLOW for s in HEADS})
    rig = Rig(models=fake, settings=with_budgets(turn_ms=120, commit=20))
    t0 = time.perf_counter()
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    assert (time.perf_counter() - t0) * 1000 < 400
    await asyncio.sleep(0)  # the cancelled work notices on its next step
    assert sorted(resp.timings.degraded) == HEADS
    assert sorted(fake.cancelled) == HEADS
    assert resp.timings.total_ms < 120
    assert resp.status == TurnStatus.clarify
    assert rig.vehicle("u1").window_open is False
    assert resp.multi_intent is False and resp.detected_intents == []


async def test_everything_degraded_and_no_keyword_falls_back() -> None:
    fake = FakeModelClient(delays={"encoder": SLOW})
    rig = Rig(models=fake, settings=with_budgets(turn_ms=100))
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="今天天气怎么样"))
    assert resp.status == TurnStatus.fallback
    assert resp.intent is None
    assert resp.reply == rig.pack.responses["fallback"]
    assert resp.timings.degraded == ["encoder", *HEADS]


async def test_stage_error_degrades_without_cancellation() -> None:
    fake = FakeModelClient(errors={"retriever": "replica unavailable"})
    fake.sure("打开车窗", "cabin_window_open")
    rig = Rig(models=fake)
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    assert resp.timings.degraded == ["retriever"]
    assert fake.cancelled == []
    assert "replica unavailable" in (resp.routing_debug.stages["retriever"].error or "")
    assert resp.status == TurnStatus.completed
    assert "keyword+classifier" in resp.routing_debug.fusion.reason


async def test_a_failed_encoder_fails_the_heads_that_needed_it() -> None:
    fake = FakeModelClient(errors={"encoder": "out of memory"}).sure("打开车窗", "cabin_window_open")
    rig = Rig(models=fake)
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    assert resp.timings.degraded == ["encoder", *HEADS]
    assert "out of memory" in (resp.routing_debug.stages["classifier"].error or "")


async def test_the_model_call_receives_each_stages_deadline() -> None:
    settings = with_budgets(turn_ms=500, encoder=200, classifier=100, detector=100, retriever=100, commit=50)
    fake = FakeModelClient().sure("打开车窗", "cabin_window_open")
    rig = Rig(models=fake, settings=settings)
    before = time.time()
    await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    (request,) = fake.requests
    encoder = request.deadlines["encoder"]
    assert before + 0.19 <= encoder <= time.time() + 0.2
    for head in HEADS:  # a head's budget runs after the encoder's, capped by the turn (less the commit's reserve)
        assert request.deadlines[head] == pytest.approx(min(encoder + 0.1, before + 0.45), abs=0.02)


async def test_timings_run_from_arrival_and_draw_the_turn() -> None:
    fake = FakeModelClient(delays={"classifier": 0.02, "retriever": 0.03}).sure("打开车窗", "cabin_window_open")
    rig = Rig(models=fake, settings=with_budgets(turn_ms=2000))
    arrived = time.time() - 0.1  # the request reached the ingress 100 ms before the engine saw it
    resp = await rig.engine.chat(
        ChatRequest(user_id="u1", session_id="s1", text="打开车窗"),
        deadline=rig.engine.deadline("text", arrived=arrived),
    )
    t = resp.timings
    assert t.total_ms >= 100
    assert set(t.spans_ms) == set(t.stages) and {"encoder", *HEADS, "keyword", "fusion", "commit"} <= set(t.spans_ms)
    for stage, (start, end) in t.spans_ms.items():
        assert 100 <= start <= end <= t.total_ms, stage
    # the heads run in parallel after the encoder: their spans overlap
    c, r = t.spans_ms["classifier"], t.spans_ms["retriever"]
    assert max(c[0], r[0]) < min(c[1], r[1])
    assert t.spans_ms["encoder"][1] <= min(c[0], r[0]) + 1.0


def test_a_pinned_clock_starts_at_its_instant_and_runs_on():
    from datetime import datetime, timedelta, timezone

    from engine.clock import app_clock, pinned_clock

    ticks = iter([100.0, 100.0, 160.5])
    start = datetime(2026, 12, 6, 23, 30, tzinfo=timezone(timedelta(hours=8)))
    clock = pinned_clock(start, monotonic=lambda: next(ticks))
    assert clock() == start and clock() == start + timedelta(seconds=60.5)
    real = app_clock(UTC, None)()
    assert abs((real - datetime.now(UTC)).total_seconds()) < 5
