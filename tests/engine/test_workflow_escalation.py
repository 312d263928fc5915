"""Escalation to the LLM planner through TurnEngine (fake models and a fake language model, real packs): a turn the
local planners could not plan grows its budget, says so first, and runs the LLM's plan only when it is valid and
grounded in the words; a late model is aborted and the turn keeps the local decision inside its budget."""

from __future__ import annotations

import json
import time

from engine.events import TurnListener
from protocol.http_chat import ChatRequest, TurnStatus
from protocol.workflow import WorkflowStep
from tests.support.fakes import FakeLm, FakeModelClient, Rig, base_settings

# two requests said without the packs' keywords: the clause analysis sees them, but not surely enough to plan
UTTERANCE = "把窗户弄开一点然后歌先别放了"
GOOD = {"steps": [{"intent_id": "cabin_window_open"}, {"intent_id": "cabin_music_pause"}]}
TEXT_MS, LLM_MS, PLANNER_LLM_MS = 600.0, 1500.0, 1000.0


def models() -> FakeModelClient:
    fake = FakeModelClient()
    fake.on("把窗户弄开一点", classifier=[("cabin_window_open", 0.6)])
    fake.on("歌先别放了", classifier=[("cabin_music_pause", 0.6)])
    return fake


def settings(*, enabled: bool = True, **llm):
    base = base_settings()
    budgets = base.budgets.model_copy(
        update={
            "turn_ms": {**base.budgets.turn_ms, "text": TEXT_MS, "llm": LLM_MS},
            "stages_ms": {
                **base.budgets.stages_ms,
                "planner": 150.0,
                "planner_llm": PLANNER_LLM_MS,
                "commit": 60.0,
                "store": 50.0,
            },
        }
    )
    return base.model_copy(update={"budgets": budgets, "llm": base.llm.model_copy(update={"enabled": enabled, **llm})})


def rig(answer: dict | str, **lm) -> Rig:
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return Rig(models=models(), settings=settings(), llm=FakeLm(text, **lm))


class Heard(TurnListener):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    async def ack(self, reply, workflow) -> None:
        self.events.append(("ack", reply))

    async def planning(self, reply, budget_ms) -> None:
        self.events.append(("planning", reply, budget_ms))

    async def step(self, step: WorkflowStep) -> None:
        self.events.append(("step", step.intent_id))


async def chat(
    r: Rig, text: str = UTTERANCE, listener: TurnListener | None = None, recall=None, session_id: str = "s1"
):
    from engine.turn_context import TurnContext

    request = ChatRequest(user_id="u1", session_id=session_id, text=text)
    ctx = TurnContext(r.engine.deadline("text"), r.worlds.for_turn("u1"), listener, recall=recall)
    session = await r.engine._session(session_id, "u1", create=True)
    return await r.engine._save(session, await r.engine.chat_on(session, request, ctx), ctx)


async def test_a_valid_grounded_llm_plan_runs_after_the_turn_said_it_escalated():
    r, heard = rig(GOOD), Heard()
    resp = await chat(r, listener=heard)
    assert resp.status == TurnStatus.completed and resp.workflow.planner == "llm"
    assert [s.intent_id for s in resp.workflow.steps] == ["cabin_window_open", "cabin_music_pause"]
    assert r.vehicle().window_open
    debug = resp.routing_debug.planner
    assert debug.accepted_by == "llm" and debug.llm.outcome == "accepted" and debug.llm.request_id
    assert debug.reason == "llm: 2 steps"
    # the budget grew by turn_ms.llm - turn_ms.text, and the response says so
    assert resp.timings.escalated and resp.timings.budget_ms == LLM_MS
    assert "planner_llm" in resp.timings.stages and resp.timings.degraded == []
    # the streaming client heard the escalation first, with the new budget, then each step
    assert heard.events[0] == ("planning", "好的，我想想怎么安排。", LLM_MS)
    assert [e for e in heard.events if e[0] == "step"] == [("step", "cabin_window_open"), ("step", "cabin_music_pause")]
    assert not [e for e in heard.events if e[0] == "ack"], "one acknowledgement per turn"
    # the model was asked under the pack's schema, at interactive priority
    request = r.llm.requests[0]
    assert "cabin_music_pause" in request.json_schema["properties"]["steps"]["items"]["properties"]["intent_id"]["enum"]
    assert request.priority == 0 and request.messages[-1] == {"role": "user", "content": UTTERANCE}


async def test_an_invalid_llm_plan_is_discarded_and_nothing_runs():
    r = rig({"steps": [{"intent_id": "cabin_teleport"}]})
    resp = await chat(r)
    assert resp.workflow is None and not r.vehicle().window_open
    debug = resp.routing_debug.planner
    assert debug.accepted_by is None and debug.llm.outcome == "rejected"
    assert any("cabin_teleport" in reason for reason in debug.llm.reasons)
    assert resp.timings.degraded == [] and resp.timings.escalated


async def test_a_plan_naming_what_nobody_asked_for_is_not_run():
    r = rig({"steps": [{"intent_id": "cabin_window_open"}, {"intent_id": "cabin_door_unlock"}]})
    resp = await chat(r)
    assert resp.workflow is None and not r.vehicle().window_open
    llm = resp.routing_debug.planner.llm
    assert llm.outcome == "rejected" and any("cabin_door_unlock" in reason for reason in llm.reasons)


async def test_a_slot_value_the_words_do_not_hold_is_not_run():
    r = rig(
        {"steps": [{"intent_id": "cabin_window_open"}, {"intent_id": "cabin_set_ac", "slots": {"temperature": 24}}]}
    )
    r.models.on("歌先别放了", classifier=[("cabin_set_ac", 0.6)])
    resp = await chat(r)
    assert resp.workflow is None
    assert any("temperature 24" in reason for reason in resp.routing_debug.planner.llm.reasons)


async def test_a_late_model_is_aborted_and_the_turn_keeps_the_local_decision_inside_its_budget():
    r = rig(GOOD, delay=10.0)
    t0 = time.perf_counter()
    resp = await chat(r)
    wall_ms = (time.perf_counter() - t0) * 1000
    assert wall_ms < LLM_MS + 50
    assert resp.timings.degraded == ["planner"] and resp.routing_debug.planner.llm.outcome == "timed_out"
    assert resp.workflow is None and not r.vehicle().window_open
    assert r.llm.cancelled and r.llm.aborted == [r.llm.requests[0].request_id], "the request was aborted in the engine"
    assert PLANNER_LLM_MS - 20 <= resp.timings.stages["planner_llm"] <= PLANNER_LLM_MS + 100


async def test_a_planner_that_keeps_missing_its_budget_is_held_until_a_probe_finishes_in_time():
    now = [1000.0]
    r = Rig(
        models=models(),
        settings=settings(hold_after_timeouts=2, probe_every_s=30.0),
        llm=FakeLm(json.dumps(GOOD), delay=10.0),
    )
    r.engine._flows.escalation.hold._clock = lambda: now[0]
    for i in range(2):
        late = await chat(r, session_id=f"late-{i}")
        assert late.routing_debug.planner.llm.outcome == "timed_out" and late.timings.escalated
    t0 = time.perf_counter()
    held = await chat(r, session_id="held")
    # held: no wait for the model, the text budget kept, the local decision answered, and said so
    assert (time.perf_counter() - t0) * 1000 < TEXT_MS and len(r.llm.requests) == 2
    assert not held.timings.escalated and held.timings.budget_ms == TEXT_MS
    assert held.timings.degraded == ["planner"] and held.routing_debug.planner.llm.outcome == "held"
    assert "held" in held.routing_debug.planner.reason and held.workflow is None
    now[0] += 29.0
    assert (await chat(r, session_id="still-held")).routing_debug.planner.llm.outcome == "held"
    # a probe per probe_every_s; one that finishes in time ends the hold
    now[0] += 2.0
    r.llm.delay = 0.0
    probe = await chat(r, session_id="probe")
    assert probe.routing_debug.planner.llm.outcome == "accepted" and probe.workflow.planner == "llm"
    after = await chat(r, session_id="after")
    assert after.routing_debug.planner.llm.outcome == "accepted" and len(r.llm.requests) == 4


async def test_a_failing_model_degrades_the_planner():
    r = rig(GOOD, error=RuntimeError("replica gone"))
    resp = await chat(r)
    assert resp.timings.degraded == ["planner"] and resp.routing_debug.planner.llm.outcome == "error"
    assert resp.workflow is None


async def test_what_the_local_planners_accept_never_reaches_the_llm():
    fake = (
        models()
        .on("打开车窗", classifier=[("cabin_window_open", 0.95)])
        .on("把空调调到22度", classifier=[("cabin_set_ac", 0.9)])
    )
    r = Rig(models=fake, settings=settings(), llm=FakeLm(json.dumps(GOOD)))
    resp = await chat(r, "打开车窗然后把空调调到22度")
    assert resp.workflow.planner.startswith("template") and r.llm.requests == []
    assert not resp.timings.escalated and resp.timings.budget_ms == TEXT_MS


async def test_llm_disabled_keeps_planning_local():
    r = Rig(models=models(), settings=settings(enabled=False), llm=FakeLm(json.dumps(GOOD)))
    resp = await chat(r)
    assert r.llm.requests == [] and resp.workflow is None and not resp.timings.escalated


async def test_the_users_earlier_messages_near_this_turn_reach_the_prompt_without_another_encoder_pass():
    asked: list[tuple] = []

    async def recall(vector, text):
        asked.append((vector, text))
        return ["上次车窗开一半就够了"]

    r = rig(GOOD)
    await chat(r, recall=recall)
    assert asked == [((float(len(UTTERANCE)), 1.0), UTTERANCE)], "recalled with the turn's own vector"
    assert len(r.models.requests) == 1, "one encoder pass for the turn, memory included"
    system = r.llm.requests[0].messages[0]["content"]
    assert "上次车窗开一半就够了" in system and "不是指令" in system


async def test_a_slow_memory_does_not_hold_the_turn_up():
    import asyncio

    async def recall(vector, text):
        await asyncio.sleep(5)
        return ["never"]

    r = rig(GOOD)
    t0 = time.perf_counter()
    resp = await chat(r, recall=recall)
    assert resp.workflow.planner == "llm" and "never" not in r.llm.requests[0].messages[0]["content"]
    assert time.perf_counter() - t0 < 0.5 and 40 <= resp.timings.stages["store"] <= 150


async def test_a_turn_whose_encoder_was_lost_keeps_the_local_decision_without_asking_the_llm():
    """The encoder late or down (a replica overloaded or gone) degrades every head: the clauses have no model evidence
    to ground a plan in, and on a busy machine the LLM would add seconds to a turn already out of time."""
    fake = models()
    fake.errors["encoder"] = "replica gone"
    r = Rig(models=fake, settings=settings(), llm=FakeLm(json.dumps(GOOD)))
    resp = await chat(r)
    assert r.llm.requests == [] and not resp.timings.escalated and resp.timings.budget_ms == TEXT_MS
    assert resp.timings.degraded[0] == "encoder" and "planner_llm" not in resp.timings.stages
    assert "encoder" in resp.routing_debug.planner.reason


async def test_a_request_said_with_its_reason_keeps_the_local_decision_without_asking_the_llm():
    """Only the detector reads two requests (the reason sounds like closing the window); the clauses name one and no
    connective joins a second: the turn answers at once, nothing degraded, and the model is never asked."""
    text = "空调关了吧，冷死了"
    fake = FakeModelClient()
    fake.on(
        text,
        classifier=[("cabin_ac_off", 0.9)],
        retriever=[("cabin_ac_off", 0.85)],
        detector=[("cabin_ac_off", 0.99), ("cabin_window_close", 0.8)],
    )
    fake.on("空调关了吧", classifier=[("cabin_ac_off", 0.95)], detector=[("cabin_ac_off", 0.99)])
    fake.on("冷死了", classifier=[("cabin_window_close", 0.3)])
    lm = FakeLm(json.dumps(GOOD))
    r = Rig(models=fake, settings=settings(), llm=lm)
    resp = await chat(r, text=text)
    debug = resp.routing_debug.planner
    assert debug is not None and debug.trigger == "detector", debug
    assert lm.requests == [] and debug.llm is None and "not asked" in debug.reason
    assert resp.intent == "cabin_ac_off" and resp.workflow is None
    assert not resp.timings.escalated and resp.timings.degraded == []
