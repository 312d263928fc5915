"""Seed 000's Scheduling chain written by the programs (engine/llm/scheduling_texts.py) over a scripted language model:
the modules run in seed 000's order with the chain's facts, each checked text is used and streamed in the order it is
said, and whatever is late, fails or is refused is the template's. No model is built or served."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime
from zoneinfo import ZoneInfo

from engine.deadline import Deadline
from engine.llm.dspy_engine import dspy_lm
from engine.llm.lm import LmReply, LmRequest
from engine.llm.scheduling_texts import ProgramTexts
from engine.scheduling import Interval, SchedulingChain
from engine.scheduling.texts import said
from tests.support.fakes import FakeLm

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=TZ)  # a Tuesday
BUSY = [Interval(datetime(2026, 12, 1, 13, tzinfo=TZ), datetime(2026, 12, 1, 15, tzinfo=TZ))]
PLAN = "打算下周开始每天晚上练半小时吉他"  # an L2 plan: a habit with a period and a duration
IDEA = "想学点摄影"  # an L1 idea: nothing but the wish, so everything is missing
ROUTED = {"catch_and_rephrase": "你想养成练吉他的习惯。", "ai_can_do": "在空闲时间里排练习。", "task_level": "L2"}


class Scripted(FakeLm):
    """Answers the programs in order, each with its scripted JSON object (or raw text); records each system prompt's
    signature so the test sees which module asked."""

    def __init__(self, *answers: dict | str, **kw) -> None:
        super().__init__(**kw)
        self.answers = list(answers)

    async def complete(self, request: LmRequest) -> LmReply:
        answer = self.answers.pop(0)
        self.text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return await super().complete(request)


def chain(lm: FakeLm, budget_s: float = 2.0) -> SchedulingChain:
    return SchedulingChain(ProgramTexts(dspy_lm(lm, max_tokens=200), backend="qwen", budget_s=budget_s))


async def drafted(lm: FakeLm, text: str = PLAN, **kw):
    heard: list[str] = []

    async def on_delta(piece: str) -> None:
        heard.append(piece)

    draft = await chain(lm, **kw).run(text, now=NOW, busy=BUSY, profile={}, on_delta=on_delta)
    return draft, heard


async def template(text: str = PLAN):
    return await SchedulingChain().run(text, now=NOW, busy=BUSY, profile={})


async def test_a_plans_texts_come_from_the_programs_in_seed_000s_order_and_stream_as_they_are_decided():
    facts_said = await template()
    first = facts_said.slots[0].start_at.astimezone(TZ).strftime("%H:%M")
    plan = f"先从每天 {first} 开始练半小时，循序渐进。"
    lm = Scripted(ROUTED, {"draft_plan": plan, "constraints_and_missing_info": ""})
    draft, heard = await drafted(lm)
    assert draft.texts_by == "qwen"
    assert draft.draft_text.startswith(plan), "the generated draft, then the slots it did not name"
    assert "候选时段：" in draft.draft_text, "every slot the user confirms is said"
    assert [s.start_at for s in draft.slots] == [s.start_at for s in facts_said.slots], "the facts are the chain's"
    assert draft.next_steps_suggestion == facts_said.next_steps_suggestion, "how to confirm is never generated"
    assert heard == [draft.draft_text]
    said_text = said(draft.draft_text, draft.start_instructions, draft.questions, draft.next_steps_suggestion)
    assert said_text.startswith("".join(heard))
    route, plan_request = lm.requests
    assert route.json_schema["properties"]["task_level"]["enum"] == ["L2"], "the router's level is the chain's"
    assert "SchedulingRouter" in route.messages[0]["content"] or "任务等级" in route.messages[0]["content"]
    assert "你想养成练吉他的习惯" in plan_request.messages[-1]["content"], "each module reads the one before"
    assert "candidate_slots" in plan_request.messages[-1]["content"], "the draft is written over the facts"


async def test_an_idea_asks_its_questions_through_askquestion_and_the_questions_stream_after_the_draft():
    facts_said = await template(IDEA)
    assert facts_said.missing, "an idea lacks what the questions ask"
    lm = Scripted(
        {**ROUTED, "task_level": facts_said.task_level},
        {"draft_plan": "先试着每周拍一次照片，找找感觉。", "constraints_and_missing_info": "目标、时间"},
        {"questions": "你想拍人像还是风景？打算学多久？", "next_steps_suggestion": "先回答问题。"},
    )
    draft, heard = await drafted(lm, IDEA)
    assert draft.questions == ["你想拍人像还是风景？", "打算学多久？"]
    assert draft.next_steps_suggestion == facts_said.next_steps_suggestion
    assert heard[1] == "\n你想拍人像还是风景？打算学多久？" and len(heard) == 2
    ask = lm.requests[2]
    assert set(ask.json_schema["properties"]) == {"questions", "next_steps_suggestion"}


async def test_a_draft_that_states_a_number_of_its_own_or_claims_a_booking_is_the_templates():
    facts_said = await template()
    for invented in ("每天 23:45 练习半小时。", "已经帮你安排好了每天的练习。"):
        lm = Scripted(ROUTED, {"draft_plan": invented, "constraints_and_missing_info": ""})
        draft, heard = await drafted(lm)
        assert draft.draft_text == facts_said.draft_text and draft.texts_by == "template"
        assert heard == [], "a refused text never reaches the client"


async def test_garbage_or_a_failed_model_is_the_template_turn_unchanged():
    for lm in (Scripted("not json at all", "still not json"), FakeLm(error=RuntimeError("down"))):
        draft, heard = await drafted(lm)
        assert draft == await template() and heard == []


async def test_a_late_model_is_cut_at_the_writers_budget_and_the_template_answers():
    lm = FakeLm(json.dumps(ROUTED), delay=5.0)
    started = asyncio.get_running_loop().time()
    draft, heard = await drafted(lm, budget_s=0.3)
    assert asyncio.get_running_loop().time() - started < 1.5
    assert draft == await template() and heard == [] and lm.cancelled


async def test_inside_a_phase_the_writer_keeps_to_its_share_of_what_the_phase_has_left():
    lm = FakeLm(json.dumps(ROUTED), delay=5.0)
    deadline = Deadline(10_000)
    started = asyncio.get_running_loop().time()
    async with deadline.phase("agent", 0.5):
        draft, _ = await drafted(lm, budget_s=2.0)
    assert asyncio.get_running_loop().time() - started < 0.5, "the template answered before the phase ended"
    assert draft.texts_by == "template"


async def test_an_action_gets_draftactions_texts_with_its_start_instructions():
    text = "今晚先把简历改一版"  # an L3 action: one first step today
    facts_said = await template(text)
    assert facts_said.task_level == "L3" and facts_said.slots
    lm = Scripted(
        {"catch_and_rephrase": "今晚改简历。", "ai_can_do": "找一段空闲时间。", "task_level": "L3"},
        {
            "action_description": "今晚找一段安静的时间改简历。",
            "start_instructions": "先打开上一版，列出要改的三处。",
            "constraints_and_missing_info": "",
        },
    )
    draft, heard = await drafted(lm, text)
    assert (
        draft.draft_text.startswith("今晚找一段安静的时间改简历。")
        and draft.start_instructions == "先打开上一版，列出要改的三处。"
    )
    assert heard == [draft.draft_text, "\n" + draft.start_instructions]
    assert "action_description" in lm.requests[1].json_schema["properties"]
    assert lm.requests[0].json_schema["properties"]["task_level"]["enum"] == ["L3"]
