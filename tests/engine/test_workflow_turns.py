"""Workflow turns through TurnEngine (fake models, real packs): planning, conditions, confirmations, resume, stop,
the planner's budget and the events a streaming client hears."""

from __future__ import annotations

import asyncio
import time

from engine.events import TurnListener
from engine.plugins import PluginRegistry
from engine.session import SessionStatus
from engine.turn import TurnEngine
from protocol.http_chat import ChatRequest, FillSlotsRequest, TurnStatus
from protocol.workflow import WorkflowStep
from tests.support.fakes import FakeModelClient, Rig, with_budgets

PENDING, SHIPPED = "A12345", "B7788"  # sha256(id) % 3: pending_shipment, shipped


def conditional(order: str) -> str:
    return f"查一下订单{order}，如果还没发货就帮我取消"


def scripted() -> FakeModelClient:
    """Clause scores as the served classifier gives them for the utterances below."""
    fake = FakeModelClient()
    for order in (PENDING, SHIPPED):
        fake.on(f"查一下订单{order}", classifier=[("cs_query_order", 0.9), ("cs_cancel_order", 0.05)])
    fake.on("如果还没发货就帮我取消", classifier=[("cs_cancel_order", 0.85), ("cs_query_logistics", 0.1)])
    fake.on("打开车窗", classifier=[("cabin_window_open", 0.95)])
    fake.on("把空调调到22度", classifier=[("cabin_set_ac", 0.9)])
    fake.on("导航", classifier=[("cabin_nav_to", 0.85)])
    return fake


def order_status(rig: Rig, order: str) -> str:
    return rig.worlds.world("u1").order_status(order)


def chat(rig: Rig, text: str, *, session: str = "s1", engine: TurnEngine | None = None):
    return (engine or rig.engine).chat(ChatRequest(user_id="u1", session_id=session, text=text))


async def test_a_sequence_runs_in_the_order_said_with_one_natural_summary():
    rig = Rig(models=scripted())
    resp = await chat(rig, "打开车窗然后把空调调到22度")
    assert resp.status == TurnStatus.completed
    wf = resp.workflow
    assert wf.type == "sequence" and wf.status == "completed" and wf.planner == "template:window_then_ac_sequence"
    assert [s.intent_id for s in wf.steps] == ["cabin_window_open", "cabin_set_ac"]
    assert [s.step_id for s in wf.steps] == ["s1", "s2"] and wf.steps[1].slots == {"temperature": 22}
    assert wf.step_results["s2"]["temperature"] == 22
    v = rig.vehicle()
    assert v.window_open and v.ac_on and v.temperature == 22
    assert resp.reply == wf.summary == "好，车窗已经打开了，空调也调到22度了。"
    assert resp.routing_debug.planner.accepted_by == "template:window_then_ac_sequence"
    assert [c.selected for c in resp.routing_debug.planner.clauses] == [["cabin_window_open"], ["cabin_set_ac"]]
    assert (await rig.store.load("s1")).status == SessionStatus.completed


async def test_a_pending_order_is_queried_then_cancelled_only_after_confirmation():
    rig = Rig(models=scripted())
    asked = await chat(rig, conditional(PENDING))
    assert asked.status == TurnStatus.waiting_confirmation and asked.pending_slots == ["confirmation"]
    query, cancel = asked.workflow.steps
    assert asked.workflow.type == "conditional"
    assert query.status == "done" and query.result["data"]["order_status"] == "pending_shipment"
    assert cancel.status == "waiting_confirmation" and cancel.depends_on == ["s1"] and cancel.requires_confirmation
    assert cancel.condition.model_dump() == {
        "source_step": "s1",
        "field": "order_status",
        "operator": "equals",
        "value": "pending_shipment",
    }
    assert cancel.slots == {"order_id": PENDING}, "the order number said once serves both steps"
    assert f"订单{PENDING}状态" in asked.reply and "确认要" in asked.reply
    assert order_status(rig, PENDING) == "pending_shipment"

    done = await chat(rig, "确认")
    assert done.status == TurnStatus.completed and done.workflow.status == "completed"
    assert done.reply == f"好，订单{PENDING}已经取消了。", "the reply says what this turn did"
    assert [s.status for s in done.workflow.steps] == ["done", "done"]
    assert order_status(rig, PENDING) == "cancelled"


async def test_a_shipped_order_skips_the_cancel_with_a_spoken_reason_and_cancels_nothing():
    rig = Rig(models=scripted())
    resp = await chat(rig, conditional(SHIPPED))
    assert resp.status == TurnStatus.completed
    query, cancel = resp.workflow.steps
    assert query.status == "done" and cancel.status == "skipped"
    assert cancel.skip_reason == "订单已经发货了，所以没有取消订单。"
    assert resp.reply.endswith(cancel.skip_reason)
    assert order_status(rig, SHIPPED) == "shipped"


async def test_declining_at_the_confirmation_cancels_nothing_and_completes_the_workflow():
    for answer in ("取消", "算了"):  # 算了 is also a stop phrase: at a confirmation it declines the step
        rig = Rig(models=scripted())
        await chat(rig, conditional(PENDING))
        resp = await chat(rig, answer)
        assert resp.status == TurnStatus.completed, answer
        assert resp.workflow.steps[1].status == "skipped" and resp.workflow.status == "completed"
        assert resp.reply == "好的，取消订单这一步不做了。"
        assert order_status(rig, PENDING) == "pending_shipment"


async def test_an_unclear_answer_asks_again_and_a_stop_phrase_stops_the_workflow():
    rig = Rig(models=scripted())
    await chat(rig, conditional(PENDING))
    again = await chat(rig, "我再想想")
    assert again.status == TurnStatus.waiting_confirmation and again.reply.startswith("抱歉，我没听清")
    stopped = await chat(rig, "停止")
    assert stopped.status == TurnStatus.stopped and stopped.workflow.status == "stopped"
    assert stopped.workflow.steps[1].status == "pending"
    assert order_status(rig, PENDING) == "pending_shipment", "no further step runs after a stop"
    state = await rig.store.load("s1")
    assert state.status == SessionStatus.stopped


async def test_a_missing_slot_pauses_the_workflow_and_fill_slots_resumes_it():
    rig = Rig(models=scripted())
    asked = await chat(rig, "打开车窗然后导航")
    assert asked.status == TurnStatus.waiting_slot and asked.pending_slots == ["destination"]
    assert [s.status for s in asked.workflow.steps] == ["done", "waiting_slot"]
    assert rig.vehicle().window_open, "the step before the pause ran"
    done = await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", slots={"destination": "公司"}))
    assert done.status == TurnStatus.completed
    assert rig.vehicle().destination == "公司"
    assert [s.status for s in done.workflow.steps] == ["done", "done"]


async def test_a_slot_the_paused_step_does_not_have_is_refused_and_changes_nothing():
    import pytest

    from engine.errors import InvalidInput

    rig = Rig(models=scripted())
    await chat(rig, "打开车窗然后导航")
    with pytest.raises(InvalidInput) as refused:
        await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", slots={"temperature": 22}))
    assert refused.value.field == "slots.temperature"
    state = await rig.store.load("s1")
    assert state.workflow.status == "waiting_slot" and state.workflow.steps[1].status == "waiting_slot"


async def test_a_paused_workflow_resumes_on_another_engine_sharing_the_session_store():
    """The workflow lives in the session row: another orchestrator replica continues it."""
    rig = Rig(models=scripted())
    await chat(rig, conditional(PENDING))
    other = TurnEngine(
        pack=rig.pack,
        settings=rig.settings,
        models=rig.models,
        sessions=rig.store,
        plugins=PluginRegistry(),
        worlds=rig.worlds,
    )
    done = await chat(rig, "确认", engine=other)
    assert done.status == TurnStatus.completed and order_status(rig, PENDING) == "cancelled"


async def test_an_unrelated_command_at_a_paused_slot_leaves_the_workflow():
    fake = scripted().sure("关窗", "cabin_window_close")
    rig = Rig(models=fake)
    await chat(rig, "打开车窗然后导航")
    resp = await chat(rig, "关窗")
    assert resp.status == TurnStatus.completed and resp.intent == "cabin_window_close" and resp.workflow is None
    assert (await rig.store.load("s1")).workflow is None


async def test_a_single_command_never_reaches_the_planner():
    rig = Rig(models=FakeModelClient().sure("打开车窗", "cabin_window_open"))
    resp = await chat(rig, "打开车窗")
    assert resp.routing_debug.planner is None and "planner" not in resp.timings.stages and resp.workflow is None


async def test_a_slowed_planner_degrades_to_the_fusion_decision_inside_the_budget():
    async def slow(stage: str) -> None:
        await asyncio.sleep(0.5)

    settings = with_budgets(turn_ms=600, planner=150, commit=60)
    fake = scripted().on(
        "打开车窗然后把空调调到22度", classifier=[("cabin_window_open", 0.6)], retriever=[("cabin_window_open", 0.6)]
    )
    rig = Rig(models=fake, settings=settings)
    rig.engine = TurnEngine(
        pack=rig.pack,
        settings=settings,
        models=fake,
        sessions=rig.store,
        plugins=PluginRegistry(),
        worlds=rig.worlds,
        faults=slow,
    )
    t0 = time.perf_counter()
    resp = await chat(rig, "打开车窗然后把空调调到22度")
    assert (time.perf_counter() - t0) * 1000 < 600 + 50
    assert resp.timings.degraded == ["planner"] and resp.routing_debug.planner.degraded
    assert resp.workflow is None, "the turn keeps the fusion decision"
    assert (resp.status, resp.intent) == (TurnStatus.completed, "cabin_window_open")
    assert 140 <= resp.timings.stages["planner"] <= 200


class Heard(TurnListener):
    def __init__(self, rig: Rig) -> None:
        self.events: list[tuple[str, object]] = []
        self._rig = rig

    async def ack(self, reply, workflow) -> None:
        self.events.append(("ack", self._rig.vehicle().window_open))

    async def step(self, step: WorkflowStep) -> None:
        self.events.append(("step", step.intent_id))


async def test_a_listener_hears_the_ack_before_any_plugin_ran_then_each_step_in_order():
    from engine.turn_context import TurnContext

    rig = Rig(models=scripted())
    heard = Heard(rig)
    state = await rig.engine._session("s1", "u1", create=True)
    ctx = TurnContext(rig.engine.deadline("text"), rig.worlds.for_turn("u1"), listener=heard)
    resp = await rig.engine.chat_on(
        state, ChatRequest(user_id="u1", session_id="s1", text="打开车窗然后把空调调到22度"), ctx
    )
    assert resp.status == TurnStatus.completed
    assert heard.events == [("ack", False), ("step", "cabin_window_open"), ("step", "cabin_set_ac")]


async def test_a_client_gone_after_a_step_stops_the_workflow_before_the_next_plugin():
    from engine.turn_context import TurnContext

    class GoneAfterFirst(Heard):
        @property
        def gone(self) -> bool:
            return any(kind == "step" for kind, _ in self.events)

    rig = Rig(models=scripted())
    state = await rig.engine._session("s1", "u1", create=True)
    ctx = TurnContext(rig.engine.deadline("text"), rig.worlds.for_turn("u1"), listener=GoneAfterFirst(rig))
    resp = await rig.engine.chat_on(
        state, ChatRequest(user_id="u1", session_id="s1", text="打开车窗然后把空调调到22度"), ctx
    )
    assert resp.status == TurnStatus.stopped and resp.workflow.status == "stopped"
    assert [s.status for s in state.workflow.steps] == ["done", "pending"]
    world = await ctx.world.get()
    assert world.vehicle.window_open and not world.vehicle.ac_on, "the step after the client left never ran"
    assert ctx.world.changed, "what ran is committed with the turn"
