"""The partial-request rule (engine/partial.py) on both packs' real models, in-process: the doable clauses run, the
reply and `not_done` name the clauses outside the catalog, a reason beside a request is never named, and a request
wholly outside stays a refusal — with the local planners, with the planner stage off, and after an LLM plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from deployments.artifacts import served_settings
from deployments.in_process import InProcessModels
from deployments.nlu import build_nlu
from engine.partial import spoken
from engine.plugins import InMemoryWorlds, PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from protocol.http_chat import ChatRequest, ChatResponse, TurnStatus
from tests.support.fakes import FakeLm, FakeModelClient, Rig
from tests.support.packs import untimed

CASES = yaml.safe_load((Path(__file__).parents[1] / "data" / "partial_requests.yaml").read_text(encoding="utf-8"))
MIN_NAMED = 0.9  # of the partly-outside cases, the share done and named exactly


def engine_for(built, *, planner: bool = True) -> tuple[TurnEngine, InProcessModels]:
    pack, settings = built
    models = InProcessModels(build_nlu(settings))
    served = untimed(served_settings(settings))
    if not planner:
        served = served.model_copy(update={"planner": served.planner.model_copy(update={"enabled": False})})
    engine = TurnEngine(
        pack=pack,
        settings=served,
        models=models,
        sessions=InMemorySessionStore(600),
        plugins=PluginRegistry(),
        worlds=InMemoryWorlds(),
    )
    return engine, models


@pytest.fixture(scope="module")
def cockpit_engine(cockpit):
    engine, models = engine_for(cockpit)
    yield engine
    models.close()


def done(response: ChatResponse) -> list[str] | str:
    if response.status == TurnStatus.rejected:
        return "rejected"
    if response.workflow is not None:
        return [s.intent_id for s in response.workflow.steps]
    return [response.intent] if response.intent else []


def test_the_reply_names_a_clause_in_the_users_words_verb_first():
    assert spoken("帮我把后备箱打开") == "打开后备箱"
    assert spoken("把座椅通风打开吧") == "打开座椅通风"
    assert spoken("帮我订一张机票") == "订一张机票"
    assert spoken("另外帮我给老婆发个微信") == "给老婆发个微信"
    assert spoken("开一下前排按摩") == "开一下前排按摩"


@pytest.mark.models
@pytest.mark.parametrize("name", ["cockpit", "timeflow"])
async def test_the_doable_part_runs_and_the_reply_names_the_rest(request, name):
    engine, models = engine_for(request.getfixturevalue(name)) if name == "timeflow" else (None, None)
    engine = engine or request.getfixturevalue("cockpit_engine")
    try:
        partial, wrong, named_wrongly = 0, [], []
        for n, case in enumerate(CASES[name]):
            response = await engine.chat(ChatRequest(user_id=f"partial-{n}", text=case["text"]))
            named = [x.text for x in response.not_done]
            if case["not_done"]:
                partial += 1
                said = all(spoken(t) in response.reply for t in named)
                if done(response) != case["done"] or named != case["not_done"] or not said:
                    wrong.append((case["text"], done(response), named, response.reply))
            elif named or done(response) != case["done"]:  # a reason named, or a refusal that was not one
                named_wrongly.append((case["text"], done(response), named, response.reply))
        right = 1 - len(wrong) / partial
        print(f"\n{name}: {partial - len(wrong)}/{partial} partly-outside requests done and named", *wrong, sep="\n  ")
        assert right >= MIN_NAMED, wrong
        assert named_wrongly == []
    finally:
        if models is not None:
            models.close()


@pytest.mark.models
async def test_the_boot_is_named_after_the_navigation_with_the_planner_stage_off(cockpit):
    engine, models = engine_for(cockpit, planner=False)
    try:
        response = await engine.chat(ChatRequest(user_id="p", text="帮我把后备箱打开然后导航去最近的充电站"))
        assert response.routing_debug.planner is None
        assert response.status == TurnStatus.completed and response.intent == "cabin_nav_to"
        assert response.reply.endswith("打开后备箱我还做不到。") and "充电站" in response.reply
        assert [(x.text, x.reason) for x in response.not_done] == [("帮我把后备箱打开", "outside_catalog")]
        # refused whole before: the doable clause now runs
        response = await engine.chat(ChatRequest(user_id="q", text="把后排除雾打开，然后帮我打个电话给张三"))
        assert response.intent == "cabin_defog_rear" and response.status == TurnStatus.completed
        assert [x.text for x in response.not_done] == ["帮我打个电话给张三"]
    finally:
        models.close()


@pytest.mark.models
async def test_a_question_the_turn_asks_comes_after_what_is_not_done_and_the_answer_does_not_repeat_it(
    cockpit_engine,
):
    engine = cockpit_engine
    asked = await engine.chat(ChatRequest(user_id="p", session_id="s", text="帮我订一张机票，然后把空调温度调一下"))
    assert asked.status == TurnStatus.waiting_slot and asked.intent == "cabin_set_ac"
    assert asked.reply.startswith("订一张机票我还做不到。") and asked.reply.endswith("？")
    answered = await engine.chat(ChatRequest(user_id="p", session_id="s", text="22度"))
    assert answered.status == TurnStatus.completed and answered.not_done == []
    assert "机票" not in answered.reply


async def test_after_an_llm_plan_the_clause_it_could_not_plan_is_named():
    fake = FakeModelClient()
    fake.on("把窗户弄开一点", classifier=[("cabin_window_open", 0.6)])
    fake.on("歌先别放了", classifier=[("cabin_music_pause", 0.6)])
    fake.on("帮我把后备箱打开", classifier=[("__out_of_scope__", 0.93), ("cabin_door_unlock", 0.02)])
    plan = {"steps": [{"intent_id": "cabin_window_open"}, {"intent_id": "cabin_music_pause"}]}
    from tests.engine.test_workflow_escalation import chat, settings

    r = Rig(models=fake, settings=settings(), llm=FakeLm(json.dumps(plan)))
    response = await chat(r, "把窗户弄开一点然后歌先别放了然后帮我把后备箱打开")
    assert response.workflow is not None and response.workflow.planner == "llm"
    assert [s.intent_id for s in response.workflow.steps] == ["cabin_window_open", "cabin_music_pause"]
    assert response.reply.endswith("打开后备箱我还做不到。")
    assert [x.text for x in response.not_done] == ["帮我把后备箱打开"]
