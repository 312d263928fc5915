"""Ready means ready (no Ray): green only once every deployment runs and a warm-up ran every stage undegraded."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace

from engine.deadline import Deadline
from engine.llm.planner import LlmPlanOutcome
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.turn_debug import Timings
from serve_app.readiness import AppReadiness, Readiness

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


async def test_not_ready_while_the_warm_up_turn_degrades_or_skips_a_stage():
    r = readiness(Engine(degraded=["encoder", "classifier"]))
    assert not await r.check() and "degraded" in r.reason and "encoder" in r.reason
    r = readiness(Engine(stages={"keyword": 0.1}))
    assert not await r.check() and "skipped" in r.reason


async def test_green_once_everything_answered_warm():
    r = readiness(Engine())
    assert await r.check() and r.ready and r.reason == ""


async def test_stages_slowed_on_purpose_may_degrade():
    r = readiness(Engine(degraded=["classifier"]), allowed_degraded=frozenset({"classifier"}))
    assert await r.check()


async def test_waiting_gives_up_after_its_time_and_says_why():
    r = readiness(Engine(degraded=["encoder"]))
    t0 = time.perf_counter()
    assert not await r.until_ready(within_s=0.05)
    assert time.perf_counter() - t0 < 1.0 and not r.ready and r.reason


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
