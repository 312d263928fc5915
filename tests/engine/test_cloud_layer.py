"""Seed 003's cloud layer through TurnEngine (fake models and fake language models, real packs): the planner backends
of `llm.use.planner` asked in order after the local planners, each plan validated and grounded the same way, each
failure a fallback marked in routing_debug; and the social responder answering chit-chat and requests outside the
catalog with a checked reply inside the turn's deadline, the template otherwise."""

from __future__ import annotations

import json
import time

from engine.llm.lm import LmFailed
from engine.llm.responder import ReplyBackend, SocialResponder
from protocol.http_chat import ChatRequest, TurnStatus
from tests.engine.test_workflow_escalation import GOOD, LLM_MS, PLANNER_LLM_MS, UTTERANCE, chat, models, settings
from tests.support.fakes import FakeLm, FakeModelClient, Rig

QWEN = {"base_url": "http://127.0.0.1:9/v1", "model": "qwen-plus", "generates": True, "timeout_s": 5.0}


def cloud_settings(planner=("local", "qwen"), social=(), **qwen):
    base = settings()
    llm = base.llm.model_validate(
        {
            **base.llm.model_dump(),
            "backends": {"qwen": {**QWEN, **qwen}},
            "use": {"planner": list(planner), "social": list(social), "programs": [], "summariser": []},
        }
    )
    return base.model_copy(update={"llm": llm})


def fenced(plan: dict) -> str:
    return "好的，计划如下：\n```json\n" + json.dumps(plan, ensure_ascii=False) + "\n```"


async def test_what_the_local_llm_gets_wrong_the_cloud_plans_and_it_runs():
    local, qwen = FakeLm('{"steps":[{"intent_id":"cabin_teleport"}]}'), FakeLm(fenced(GOOD))
    r = Rig(models=models(), settings=cloud_settings(), llm={"local": local, "qwen": qwen})
    resp = await chat(r)
    assert resp.status == TurnStatus.completed and resp.workflow.planner == "llm:qwen" and r.vehicle().window_open
    debug = resp.routing_debug.planner
    assert debug.accepted_by == "llm:qwen" and debug.llm.backend == "qwen" and debug.llm.outcome == "accepted"
    assert [(a.backend, a.outcome) for a in debug.llm_attempts] == [("local", "rejected"), ("qwen", "accepted")]
    assert resp.timings.degraded == [] and resp.timings.budget_ms == LLM_MS
    # the local engine is sent the catalog's schema; an endpoint without json_schema gets the instruction alone
    assert local.requests[0].json_schema is not None and qwen.requests[0].json_schema is None
    assert "只输出一个 JSON 对象" in qwen.requests[0].messages[0]["content"]


async def test_a_cloud_backend_with_json_schema_is_sent_the_catalogs_schema():
    qwen = FakeLm(json.dumps(GOOD))
    r = Rig(models=models(), settings=cloud_settings(planner=["qwen"], json_schema=True), llm={"qwen": qwen})
    resp = await chat(r)
    assert resp.workflow.planner == "llm:qwen"
    enum = qwen.requests[0].json_schema["properties"]["steps"]["items"]["properties"]["intent_id"]["enum"]
    assert "cabin_window_open" in enum and "__social__" not in enum


async def test_a_backend_that_is_down_leaves_the_local_decision_marked_and_nothing_runs():
    qwen = FakeLm(error=LmFailed("qwen: HTTP 500"))
    r = Rig(models=models(), settings=cloud_settings(planner=["qwen"]), llm={"qwen": qwen})
    resp = await chat(r)
    assert resp.workflow is None and not r.vehicle().window_open
    debug = resp.routing_debug.planner
    assert debug.llm.outcome == "error" and debug.llm.reasons == ["qwen: HTTP 500"] and debug.llm.backend == "qwen"
    assert "llm:qwen: qwen: HTTP 500" in debug.reason and resp.timings.degraded == ["planner"]


async def test_a_busy_backend_is_passed_over_at_once_to_the_next():
    busy, qwen = FakeLm(error=LmFailed("local: busy (1 calls in flight)", busy=True)), FakeLm(json.dumps(GOOD))
    r = Rig(models=models(), settings=cloud_settings(), llm={"local": busy, "qwen": qwen})
    resp = await chat(r)
    assert [(a.backend, a.outcome) for a in resp.routing_debug.planner.llm_attempts] == [
        ("local", "busy"),
        ("qwen", "accepted"),
    ]
    assert resp.workflow.planner == "llm:qwen" and resp.timings.degraded == []


async def test_a_slow_cloud_is_cut_at_its_timeout_and_the_turn_answers_inside_its_budget():
    qwen = FakeLm(json.dumps(GOOD), delay=10.0)
    r = Rig(models=models(), settings=cloud_settings(planner=["qwen"], timeout_s=0.4), llm={"qwen": qwen})
    t0 = time.perf_counter()
    resp = await chat(r)
    assert (time.perf_counter() - t0) * 1000 < 400 + 300
    assert resp.routing_debug.planner.llm.outcome == "timed_out" and qwen.cancelled
    assert qwen.aborted == [qwen.requests[0].request_id] and resp.workflow is None
    assert resp.timings.stages["planner_llm"] <= 400 + 60 < PLANNER_LLM_MS


async def test_garbage_and_plans_outside_the_catalog_or_the_words_never_run():
    for answer in (
        "我觉得应该先开窗",
        '{"steps":[{"intent_id":"cabin_self_destruct"}]}',
        json.dumps({"steps": [{"intent_id": "cabin_window_open"}, {"intent_id": "cabin_door_unlock"}]}),
    ):
        qwen = FakeLm(answer)
        r = Rig(models=models(), settings=cloud_settings(planner=["qwen"]), llm={"qwen": qwen})
        resp = await chat(r)
        assert resp.workflow is None and not r.vehicle().window_open and r.vehicle().doors_locked
        assert resp.routing_debug.planner.llm.outcome == "rejected", answer


async def test_each_backend_has_its_own_hold():
    local, qwen = FakeLm(json.dumps(GOOD), delay=10.0), FakeLm(json.dumps(GOOD))
    s = cloud_settings(timeout_s=5.0)
    s = s.model_copy(update={"llm": s.llm.model_copy(update={"hold_after_timeouts": 1})})
    s = s.model_copy(update={"budgets": s.budgets.model_copy(update={"turn_ms": {**s.budgets.turn_ms, "llm": 2600.0}})})
    r = Rig(models=models(), settings=s, llm={"local": local, "qwen": qwen})
    first = await chat(r, session_id="a")  # local times out, qwen plans in what is left
    assert [(a.backend, a.outcome) for a in first.routing_debug.planner.llm_attempts] == [
        ("local", "timed_out"),
        ("qwen", "accepted"),
    ]
    second = await chat(r, session_id="b")  # local is held now: not asked, no wait
    assert [(a.backend, a.outcome) for a in second.routing_debug.planner.llm_attempts] == [
        ("local", "held"),
        ("qwen", "accepted"),
    ]
    assert len(local.requests) == 1 and second.timings.total_ms < 1000


# ---- the social responder ------------------------------------------------------------------------------------------


def social_rig(lm: FakeLm, text: str, *, timeout_s: float = 5.0, intent: str | None = None) -> Rig:
    fake = FakeModelClient()
    if intent:
        fake.sure(text, intent)
    writer = SocialResponder([ReplyBackend("qwen", lm, 0.6, timeout_s=timeout_s)], budget_s=0.3, extra_ms=900.0)
    return Rig(models=fake, settings=cloud_settings(planner=[], social=["qwen"]), replies=writer)


async def say(r: Rig, text: str):
    return await r.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=text))


async def test_a_feeling_outside_the_catalog_is_answered_by_the_cloud_in_its_own_words():
    lm = FakeLm("听起来你最近压力不小，焦虑是很正常的反应。要不要先深呼吸几下？")
    r = social_rig(lm, "我好焦虑")
    resp = await say(r, "我好焦虑")
    assert resp.status == TurnStatus.social and resp.reply.startswith("听起来你最近压力不小")
    assert [(d.backend, d.outcome) for d in resp.routing_debug.replies] == [("qwen", "generated")]
    request = lm.requests[0]
    assert request.json_schema is None and request.temperature == 0.6 and request.max_tokens == 120
    assert request.messages[-1] == {"role": "user", "content": "我好焦虑"} and "JSON" in request.messages[0]["content"]
    assert resp.timings.escalated and "reply" in resp.timings.stages


async def test_chit_chat_is_the_clouds_and_a_claimed_action_gives_the_template():
    chitchat = "今天天气真不错啊"
    r = social_rig(FakeLm("是啊，适合出去兜兜风。"), chitchat, intent="__social__")
    assert (await say(r, chitchat)).reply == "是啊，适合出去兜兜风。"
    r = social_rig(FakeLm("好的，已经帮你打开车窗了"), chitchat, intent="__social__")
    resp = await say(r, chitchat)
    assert resp.reply == "哈哈，我更擅长帮您操作车上的功能，有需要随时说。" and not r.vehicle().window_open
    assert [(d.outcome, d.reason) for d in resp.routing_debug.replies] == [("refused", "too long or claims an action")]


async def test_a_slow_or_failing_cloud_gives_the_template_inside_the_budget():
    lm = FakeLm("慢慢来。", delay=10.0)
    r = social_rig(lm, "我好焦虑", timeout_s=0.4)
    t0 = time.perf_counter()
    resp = await say(r, "我好焦虑")
    assert (time.perf_counter() - t0) < 0.4 + 0.3 and resp.status == TurnStatus.rejected
    assert resp.routing_debug.replies[0].outcome == "timed_out" and lm.aborted == [lm.requests[0].request_id]
    r = social_rig(FakeLm(error=LmFailed("qwen: HTTP 401")), "我好焦虑")
    resp = await say(r, "我好焦虑")
    assert resp.status == TurnStatus.rejected
    assert [(d.outcome, d.reason) for d in resp.routing_debug.replies] == [("error", "qwen: HTTP 401")]


async def test_without_a_social_backend_the_turn_is_todays():
    today = Rig(models=FakeModelClient())
    resp = await say(today, "我好焦虑")
    assert resp.status == TurnStatus.rejected and resp.routing_debug.replies == [] and not resp.timings.escalated
    assert UTTERANCE  # the planner tests' utterance is unchanged by the cloud layer
