"""Multi-step commands on the real models, in-process: checked step by step — intents, order, slots, and the final
state of the simulated vehicle and order book — on the development set and on the held-out one, which was never
used for tuning. And no single command of either pack's held-out split is planned into a workflow."""

from __future__ import annotations

import pytest

from deployments.artifacts import served_settings
from deployments.in_process import InProcessModels
from deployments.nlu import build_nlu
from engine.plugins import InMemoryWorlds, PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from protocol.http_chat import ChatRequest
from tests.engine.workflow_cases import check_case, load_cases
from tests.support.packs import untimed

MIN_RIGHT = 0.9


def engine_for(built) -> tuple[TurnEngine, InMemoryWorlds, InProcessModels]:
    pack, settings = built
    models = InProcessModels(build_nlu(settings))
    worlds = InMemoryWorlds()
    engine = TurnEngine(
        pack=pack,
        settings=untimed(served_settings(settings)),
        models=models,
        sessions=InMemorySessionStore(600),
        plugins=PluginRegistry(),
        worlds=worlds,
    )
    return engine, worlds, models


@pytest.fixture(scope="module")
def cockpit_engine(cockpit):
    engine, worlds, models = engine_for(cockpit)
    yield engine, worlds
    models.close()


@pytest.mark.parametrize("split", ["dev", "test"])
async def test_multi_step_commands_are_planned_and_run_step_by_step(cockpit_engine, split):
    engine, worlds = cockpit_engine
    cases = load_cases(split)
    verdicts = [await check_case(engine, worlds, case, f"{split}-{n}") for n, case in enumerate(cases)]
    wrong = [(v.text, v.problems) for v in verdicts if not v.ok]
    right = 1 - len(wrong) / len(cases)
    print(f"\n{split}: {len(cases) - len(wrong)}/{len(cases)} right", *wrong, sep="\n  ")
    assert right >= MIN_RIGHT, wrong


@pytest.mark.models
@pytest.mark.parametrize("name", ["cockpit", "timeflow"])
async def test_no_single_command_of_the_held_out_split_becomes_a_workflow(request, name):
    engine, _, models = engine_for(request.getfixturevalue(name))
    try:
        planned, reached = [], 0
        for n, (text, _) in enumerate(engine.pack.test_rows()):
            resp = await engine.chat(ChatRequest(user_id=f"single-{n}", text=text))
            reached += resp.routing_debug.planner is not None
            if resp.workflow is not None:
                planned.append((text, [s.intent_id for s in resp.workflow.steps]))
        print(
            f"\n{name}: the planner stage ran for {reached} of {len(engine.pack.test_rows())} "
            "(detector or fusion asked); "
            f"{len(planned)} became workflows"
        )
        assert planned == []
    finally:
        models.close()


async def test_emotion_and_a_task_run_emotion_support_first_then_decide_the_task(timeflow):
    """Seed 000's Router on the timeflow pack: emotion support first whatever the order said, the task a decision
    for its agent, and the pipeline with its description on the response."""
    engine, _, models = engine_for(timeflow)
    try:
        for n, text in enumerate(["我好烦，明天的会帮我推到下午吧", "明天上午十点的会改到下午，我真的好焦虑"]):
            resp = await engine.chat(ChatRequest(user_id=f"mood-{n}", text=text))
            assert resp.workflow is not None, (text, resp.status, resp.reply)
            assert [s.intent_id for s in resp.workflow.steps] == ["emotion_support", "schedule_update"], text
            assert [s.status for s in resp.workflow.steps] == ["done", "pending"]
            assert resp.status == "decided" and resp.decision.intents == ["schedule_update"]
            assert resp.decision.agent == "schedule_todo_agent"
            assert resp.pipeline == ["EmotionSupport", "Scheduling"]
            assert resp.pipeline_description == "先情绪支持，再修改日程。"
            assert resp.reply.startswith("抱抱你") and "schedule_todo_agent" in resp.reply
    finally:
        models.close()


async def test_detector_recall_on_two_clause_commands(cockpit_engine):
    """How many of the commands in the two-clause utterances of both sets the detector names (threshold
    detector.threshold, up to max_labels); the planner's clause analysis does not depend on it, but the trigger
    does when no connective marks the second request."""
    engine, _ = cockpit_engine
    cases = [c for split in ("dev", "test") for c in load_cases(split) if len(c["steps"]) == 2]
    found = total = 0
    for n, case in enumerate(cases):
        resp = await engine.chat(ChatRequest(user_id=f"recall-{n}", text=case["text"]))
        named = {c.intent for c in resp.detected_intents}
        found += len(named & set(case["steps"]))
        total += len(case["steps"])
    print(
        f"\ndetector recall on two-clause commands: {found}/{total} = {found / total:.3f} over {len(cases)} utterances"
    )
    assert found / total >= 0.75
