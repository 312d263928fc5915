"""Generated replies and their checks: no claimed action, short enough to say, no number the facts do not hold;
late or refused, the template answers. Fake language model; no model is built or served."""

from __future__ import annotations

import json
import os
import time

import pytest

from engine.llm.dspy_engine import dspy_lm
from engine.llm.replies import LlmTextWriter, ReplyWriter, checked_reply, claims_an_action
from protocol.http_chat import ChatRequest, TurnStatus
from tests.support.fakes import FakeLm, FakeModelClient, Rig, base_settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
CHITCHAT = "今天天气真不错啊"


@pytest.mark.parametrize(
    "text", ["好的，已经帮您打开车窗了", "空调给你调到22度了", "周日的聚餐删除了", "已为您取消订单", "我帮你记下了"]
)
def test_an_action_reported_as_done_is_a_claim(text):
    assert claims_an_action(text) and checked_reply(text, max_chars=60) is None
    assert checked_reply(text, max_chars=60, actions_ran=True) == text


@pytest.mark.parametrize(
    "text",
    [
        "我可以帮您打开车窗",
        "你好呀，今天想去哪儿？",
        "辛苦了，先休息一下吧",
        "要不要我帮你安排一下？",
        "需要的话我能帮你设置提醒",
    ],
)
def test_an_offer_or_a_greeting_is_no_claim(text):
    assert not claims_an_action(text) and checked_reply(text, max_chars=60) == text


def test_blank_or_long_replies_are_refused():
    assert checked_reply("  ", max_chars=60) is None and checked_reply("好" * 61, max_chars=60) is None


def rig(answer: str | None, *, delay: float = 0.0, enabled: bool = True) -> Rig:
    settings = base_settings()
    settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"generate_replies": enabled})})
    lm = FakeLm(json.dumps({"reply": answer}, ensure_ascii=False) if answer is not None else "", delay=delay)
    r = Rig(
        models=FakeModelClient().sure(CHITCHAT, "__social__"),
        settings=settings,
        replies=ReplyWriter(dspy_lm(lm, max_tokens=48), budget_s=0.3),
    )
    r.llm = lm
    return r


async def chitchat(r: Rig):
    return await r.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=CHITCHAT))


async def test_chit_chat_says_the_generated_reply_when_it_passes():
    r = rig("是啊，天气这么好，开车也舒服。")
    resp = await chitchat(r)
    assert resp.status == TurnStatus.social and resp.reply == "是啊，天气这么好，开车也舒服。"
    assert r.llm.requests[0].json_schema["required"] == ["reply"] and "reply" in resp.timings.stages


async def test_a_generated_claim_of_an_action_gives_the_template_instead():
    r = rig("好的，已经帮你打开车窗了")
    resp = await chitchat(r)
    assert resp.reply == "哈哈，我更擅长帮您操作车上的功能，有需要随时说。"


async def test_a_late_reply_gives_the_template_inside_the_budget():
    r = rig("是啊。", delay=5.0)
    t0 = time.perf_counter()
    resp = await chitchat(r)
    assert time.perf_counter() - t0 < 1.0 and resp.reply == "哈哈，我更擅长帮您操作车上的功能，有需要随时说。"
    assert r.llm.aborted == [r.llm.requests[0].request_id]


async def test_without_generate_replies_the_model_is_never_asked():
    r = rig("是啊。", enabled=False)
    await chitchat(r)
    assert r.llm.requests == []


async def test_a_summary_states_no_number_the_facts_do_not_hold():
    facts = {"done": 3, "planned": 5}
    good = LlmTextWriter(dspy_lm(FakeLm(json.dumps({"summary_text": "这周完成了3项，计划5项。"})), max_tokens=64))
    assert await good.write("写复盘", facts=facts, timeout_s=2.0) == "这周完成了3项，计划5项。"
    made_up = LlmTextWriter(dspy_lm(FakeLm(json.dumps({"summary_text": "这周完成了4项。"})), max_tokens=64))
    assert await made_up.write("写复盘", facts=facts, timeout_s=2.0) is None
    lm = FakeLm(json.dumps({"summary_text": "好"}))
    await LlmTextWriter(dspy_lm(lm, max_tokens=64)).write("写复盘", facts=facts, timeout_s=2.0)
    assert lm.requests[0].priority == 10, "summaries queue behind interactive turns"


async def test_emotion_support_says_the_generated_comfort_when_it_passes():
    text = "最近压力好大什么都不想做"
    settings = base_settings()
    settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"generate_replies": True})})
    lm = FakeLm(json.dumps({"emotion_reply": "辛苦了，这阵子真的不容易，先歇一会儿也没关系。"}, ensure_ascii=False))
    r = Rig(
        "timeflow",
        models=FakeModelClient().sure(text, "emotion_support"),
        settings=settings,
        replies=ReplyWriter(dspy_lm(lm, max_tokens=48), budget_s=0.3),
    )
    resp = await r.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=text))
    assert resp.status == TurnStatus.decided and resp.reply == "辛苦了，这阵子真的不容易，先歇一会儿也没关系。"
    context = lm.requests[0].messages[-1]["content"]
    assert text in context and "EmotionSupport" in context, "the InteractionContext names the turn and its pipeline"
