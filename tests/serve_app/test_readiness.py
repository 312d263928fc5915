"""Ready means every stage answered (no Ray): green once every deployment runs and each stage answered its warm-up
call, however slow; what the warm-up turn degraded under its budget is reported, never waited on."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import httpx

from engine.deadline import Deadline
from engine.llm.planner import LlmPlanOutcome
from engine.model_client import NLU_STAGES
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.turn_debug import Timings
from serve_app.readiness import AppReadiness, Readiness
from tests.support.fakes import FakeModelClient

ALL = {"encoder": 9.0, "classifier": 1.0, "detector": 1.0, "retriever": 1.0, "keyword": 0.1}


@dataclass
class Engine:
    degraded: list[str] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=lambda: dict(ALL))
    media_client = None
    turns: int = 0

    def deadline(self, modality, *, arrived=None):
        return Deadline(600)

    async def chat(self, body, *, deadline, listener=None):
        self.turns += 1
        return ChatResponse(
            session_id=body.session_id,
            reply="?",
            status=TurnStatus.clarify,
            timings=Timings(stages=self.stages, degraded=self.degraded),
        )


@dataclass
class State:
    """The parts of the app state the warm-up reads: an in-process engine, no store, no media, no LLM."""

    engine: Engine
    readiness: Readiness = field(default_factory=Readiness)
    store = None
    uploads = None
    llm_planner = None


def readiness(engine: Engine, waiting: list[str] | None = None, **kw) -> AppReadiness:
    async def running():
        return f"waiting for {', '.join(waiting)}" if waiting else None

    return AppReadiness(state=State(engine), replica="r1", deployments_running=running, retry_s=0.01, **kw)


async def test_not_ready_while_a_deployment_is_not_running():
    engine = Engine()
    r = readiness(engine, waiting=["NLU (UPDATING)"])
    assert not await r.check()
    assert r.reason == "waiting for NLU (UPDATING)" and engine.turns == 0


async def test_not_ready_while_the_warm_up_turn_skips_a_stage():
    r = readiness(Engine(stages={"keyword": 0.1}))
    assert not await r.check() and "skipped" in r.reason


async def test_green_once_everything_answered_warm():
    models = FakeModelClient()
    r = readiness(Engine(), models=models)
    assert await r.check() and r.ready and r.reason == ""
    assert sorted(models.finished) == sorted(NLU_STAGES)


async def test_a_stage_slower_than_its_budget_is_warmed_until_it_answers_then_served_degraded():
    """The classifier answers (after longer than any turn budget would allow): the app is ready, and says the warm-up
    turn ran with the classifier degraded; the metrics hear the same."""
    models, reported = FakeModelClient(delays={"classifier": 0.2}), []
    engine = Engine(degraded=["classifier"])
    r = readiness(engine, models=models, report=reported.append)
    assert await r.check() and r.ready
    assert "classifier" in models.finished and "classifier" not in models.cancelled
    assert r._flag.degraded == ("classifier",) and "classifier" in r.reason and "degraded" in r.reason
    assert reported == [("classifier",)]
    assert engine.turns == 2  # a degraded first turn is tried once more (a cold store), then reported


async def test_a_stage_that_does_not_answer_keeps_the_app_not_ready_and_is_named():
    r = readiness(Engine(), models=FakeModelClient(delays={"detector": 5.0}), warm_s=0.05)
    assert not await r.check() and "stage detector has not answered" in r.reason
    r = readiness(Engine(), models=FakeModelClient(errors={"retriever": "index missing"}))
    assert not await r.check() and "stage retriever" in r.reason and "index missing" in r.reason


async def test_a_stage_that_answered_is_not_warmed_again():
    models = FakeModelClient(delays={"detector": 5.0})
    r = readiness(Engine(), models=models, warm_s=0.05)
    assert not await r.check()
    models.delays.clear()
    assert await r.check() and len(models.requests) == 2  # one call per attempt: the stages share it
    assert await r.check() and len(models.requests) == 2  # every stage has answered: none is called again


async def test_stages_failing_on_purpose_count_as_answered():
    models = FakeModelClient(errors={"classifier": "injected failure in classifier"})
    r = readiness(Engine(degraded=["classifier"]), models=models, allowed_degraded=frozenset({"classifier"}))
    assert await r.check() and r._flag.degraded == ("classifier",)


async def test_waiting_gives_up_after_its_time_and_says_which_stage():
    r = readiness(Engine(), models=FakeModelClient(delays={"encoder": 5.0}), warm_s=0.02)
    t0 = time.perf_counter()
    assert not await r.until_ready(within_s=0.05)
    assert time.perf_counter() - t0 < 2.0 and not r.ready and "stage encoder" in r.reason


@dataclass
class Planner:
    """An LLM planner that records what it was asked; `timed_out` answers like a late model."""

    timed_out: bool = False
    texts: list[str] = field(default_factory=list)
    times: list = field(default_factory=list)

    async def plan(self, text, *, deadline, budget_s, now):
        self.texts.append(text)
        self.times.append(now)
        return LlmPlanOutcome(timed_out=self.timed_out, request_id=f"r{len(self.texts)}")


def with_planner(planner: Planner) -> AppReadiness:
    state = State(Engine())
    state.llm_planner = planner  # type: ignore[assignment]
    state.settings = SimpleNamespace(timezone="Asia/Shanghai")  # type: ignore[attr-defined]

    async def running():
        return None

    return AppReadiness(state=state, replica="r1", deployments_running=running, retry_s=0.01)


async def test_the_warm_up_plans_twice_a_year_apart_so_the_engine_keeps_the_prompt_up_to_the_time():
    """The first plan prefills the planner's prompt; the second differs from it first in the year, where every later
    plan's prompt starts to differ: the engine then keeps its cache up to there (see `_planner_call`)."""
    planner = Planner()
    assert await with_planner(planner).check()
    assert len(planner.texts) == 2 and planner.texts[0] != planner.texts[1]
    first, second = planner.times
    assert second.year == first.year + 1 and first.tzinfo is not None


async def test_a_planner_that_times_out_in_its_warm_up_keeps_the_app_not_ready():
    planner = Planner(timed_out=True)
    r = with_planner(planner)
    assert not await r.check() and "planner warm-up" in r.reason and len(planner.texts) == 1


async def test_health_is_green_with_a_slow_stage_and_says_what_runs_degraded():
    """The whole ingress over a real engine whose classifier answers after 4x its budget: /health turns 200 after one
    warm-up, names the classifier, the gauge says the same, and a turn answers inside its budget, degraded."""
    from serve_app.http.api import create_api
    from serve_app.state import ModelClients, attach, build_state
    from tests.support.fakes import Rig, with_budgets

    models = FakeModelClient(delays={"classifier": 0.4})
    rig = Rig(models=models, settings=with_budgets(encoder=100, classifier=100))
    state = build_state(
        rig.settings, ModelClients(nlu=models), None, engine=rig.engine, readiness=Readiness(ready=False)
    )
    api = attach(create_api(replica="r1"), state)
    warm = AppReadiness(
        state=state, replica="r1", deployments_running=no_wait, models=models, report=state.metrics.warm_up_degraded
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://localhost") as client:
        assert (await client.get("/health")).status_code == 503
        assert await warm.until_ready(within_s=10)
        health = await client.get("/health")
        turn = (await client.post("/api/v1/agent/chat", json={"user_id": "u1", "text": "帮我把车窗打开"})).json()
    assert health.status_code == 200 and "classifier" in health.json()["reason"]
    assert state.metrics.registry.get_sample_value("baton_warmup_degraded", {"stage": "classifier"}) == 1
    assert state.metrics.registry.get_sample_value("baton_warmup_degraded", {"stage": "encoder"}) == 0
    assert "classifier" in turn["timings"]["degraded"] and turn["timings"]["total_ms"] <= turn["timings"]["budget_ms"]


async def no_wait() -> None:
    return None


async def test_a_degraded_app_says_so_until_a_turn_runs_undegraded_again():
    engine, reported = Engine(degraded=["classifier"]), []
    r = readiness(engine, models=FakeModelClient(), report=reported.append)
    assert await r.check() and r._flag.degraded == ("classifier",)
    engine.degraded = []  # the fault is cleared
    await asyncio.wait_for(r.while_degraded(every_s=0.01), 5)
    assert r.ready and r._flag.degraded == () and r.reason == "" and reported[-1] == ()
