"""Deadline and degradation: a late stage is cancelled, raises StageTimeout, and the turn still answers in budget."""
from __future__ import annotations

import asyncio
import time

import pytest

from engine.deadline import Deadline, StageTimeout
from engine.settings import STAGES
from protocol.http_chat import ChatRequest, TurnStatus

from fakes import FakeModelClient, Rig, with_budgets

SLOW = 5.0  # seconds a "hung" fake stage would sleep; every test must finish far sooner


async def test_stage_slower_than_budget_raises_stage_timeout_and_cancels_the_call() -> None:
    fake = FakeModelClient(delays={"classifier": SLOW})
    deadline = Deadline(budget_ms=1000)
    t0 = time.perf_counter()
    with pytest.raises(StageTimeout) as err:
        await deadline.run("classifier", 0.05, lambda: fake.classify("打开车窗", deadline=deadline.at))
    elapsed = time.perf_counter() - t0
    assert err.value.stage == "classifier"
    assert "classifier" in str(err.value) and "50 ms" in str(err.value)
    assert fake.cancelled == ["classifier"], "the awaited model call must observe CancelledError"
    assert fake.finished == []
    assert 0.04 <= elapsed < 0.5
    assert 40 <= deadline.stages_ms["classifier"] < 500


async def test_stage_within_budget_returns_its_result_and_records_timing() -> None:
    fake = FakeModelClient(delays={"retriever": 0.01}).on("打开车窗", retriever=[("cabin_window_open", 0.9)])
    deadline = Deadline(budget_ms=1000)
    result = await deadline.run("retriever", 0.5, lambda: fake.retrieve("打开车窗", deadline=deadline.at))
    assert [c.intent for c in result] == ["cabin_window_open"]
    assert fake.cancelled == [] and fake.finished == ["retriever"]
    assert deadline.stages_ms["retriever"] >= 5


async def test_stage_timeout_is_bounded_by_the_time_left_in_the_turn() -> None:
    fake = FakeModelClient(delays={"detector": SLOW})
    deadline = Deadline(budget_ms=60)
    t0 = time.perf_counter()
    with pytest.raises(StageTimeout):
        await deadline.run("detector", 10.0, lambda: fake.detect("x", deadline=deadline.at))
    assert time.perf_counter() - t0 < 0.5, "a 10 s stage budget must be capped by the 60 ms turn deadline"
    assert fake.cancelled == ["detector"]


async def test_expired_deadline_does_not_start_the_stage() -> None:
    fake = FakeModelClient()
    deadline = Deadline(budget_ms=0)
    await asyncio.sleep(0.001)
    with pytest.raises(StageTimeout):
        await deadline.run("classifier", 1.0, lambda: fake.classify("x", deadline=deadline.at))
    assert fake.calls == []
    assert deadline.remaining_s() == 0.0


def test_deadline_bookkeeping() -> None:
    deadline = Deadline(budget_ms=600, started=1000.0)
    assert deadline.at == pytest.approx(1000.6)
    deadline.degrade("classifier")
    deadline.degrade("classifier")
    deadline.degrade("retriever")
    assert deadline.degraded == ["classifier", "retriever"]


async def test_slow_classifier_degrades_and_turn_executes_on_keyword_plus_retriever() -> None:
    settings = with_budgets(turn_ms=400, classifier=60)
    fake = FakeModelClient(delays={"classifier": SLOW})
    # the classifier would have pointed elsewhere; it must not count since it never answers in time
    fake.on("打开车窗", classifier=[("cabin_window_close", 0.99)], retriever=[("cabin_window_open", 0.9)],
            detector=[("cabin_window_open", 0.95)])
    rig = Rig(models=fake, settings=settings)

    t0 = time.perf_counter()
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    wall_ms = (time.perf_counter() - t0) * 1000

    assert resp.timings.degraded == ["classifier"]
    assert fake.cancelled == ["classifier"]
    assert resp.status == TurnStatus.completed and resp.intent == "cabin_window_open"
    assert rig.plugins.vehicle("u1").window_open is True
    stages = resp.routing_debug.stages
    assert stages["classifier"].degraded is True and "exceeded" in (stages["classifier"].error or "")
    assert stages["classifier"].candidates == []
    fusion = resp.routing_debug.fusion
    assert fusion is not None and fusion.decision == "execute"
    assert "keyword+retriever" in fusion.reason
    assert [c.intent for c in fusion.ranked] == ["cabin_window_open"]
    # keyword 1.15*1.0 + bonus 0.25, retriever 0.75*0.9 + bonus 0.25
    assert fusion.top_score == pytest.approx(1.15 + 0.25 + 0.675 + 0.25)
    assert resp.timings.budget_ms == 400
    assert resp.timings.total_ms < 400 and wall_ms < 400
    assert 50 <= resp.timings.stages["classifier"] < 400
    assert set(resp.timings.stages) <= set(STAGES)


async def test_turn_deadline_caps_every_model_stage() -> None:
    """Stage budgets (350 ms) exceed a 120 ms turn: all three model calls are cut at the turn deadline."""
    fake = FakeModelClient(delays={s: SLOW for s in ("classifier", "retriever", "detector")})
    rig = Rig(models=fake, settings=with_budgets(turn_ms=120))
    t0 = time.perf_counter()
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    assert (time.perf_counter() - t0) * 1000 < 400
    assert sorted(resp.timings.degraded) == ["classifier", "detector", "retriever"]
    assert sorted(fake.cancelled) == ["classifier", "detector", "retriever"]
    # keyword alone (1.4) is below the execute threshold: nothing is executed, the candidate is offered
    assert resp.status == TurnStatus.clarify
    assert rig.plugins.vehicle("u1").window_open is False
    assert resp.multi_intent is False and resp.detected_intents == []


async def test_everything_degraded_and_no_keyword_falls_back() -> None:
    fake = FakeModelClient(delays={s: SLOW for s in ("classifier", "retriever", "detector")})
    rig = Rig(models=fake, settings=with_budgets(turn_ms=100))
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="今天天气怎么样"))
    assert resp.status == TurnStatus.fallback
    assert resp.intent is None
    assert resp.reply == rig.pack.responses["fallback"]
    assert len(resp.timings.degraded) == 3


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


async def test_model_calls_receive_the_turn_deadline() -> None:
    fake = FakeModelClient().sure("打开车窗", "cabin_window_open")
    rig = Rig(models=fake, settings=with_budgets(turn_ms=500))
    before = time.time()
    await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="打开车窗"))
    assert len(fake.deadlines) == 3
    for at in fake.deadlines:
        assert before + 0.45 <= at <= time.time() + 0.5
