"""Perception: the engine's response as seed 002's decision, clarification, or a reply shown as it is."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from config.settings import load_settings
from engine.conversation.perception import Clarify, Decided, Perception, Shown, default_range
from protocol.agents import AgentTimeRange
from protocol.http_chat import ChatResponse, ClarifyOption, Decision, TimeRange, TurnStatus
from protocol.store import ConversationMessageDTO, ConversationMessageMetadata

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 12, 1, 10, tzinfo=TZ)
CFG = load_settings(Path(__file__).resolve().parents[3] / "config").conversation
SOURCE, QUESTION = uuid.uuid4(), uuid.uuid4()


class FakeSplit:
    questions = {
        "goal_title": "目标是什么？",
        "deadline": "什么时候之前完成？",
        "weekly_hours": "每周能投入多少小时？",
        "current_level": "现在的基础如何？",
    }

    def prefill(self, raw_input, now):
        return {"goal_title": "学会日语"} if "日语" in raw_input else {}

    def parse_answer(self, field, text, now):
        if field == "weekly_hours":
            return 10 if "十" in text or "10" in text else None
        if field == "deadline":
            return "2027-03-01T00:00:00+08:00" if "三月" in text else None
        return text.strip() or None


def perception() -> Perception:
    return Perception(CFG, FakeSplit(), (["goal_title", "deadline", "weekly_hours"], ["current_level"]))


def decided(agent: str, function: str, params=None, when: TimeRange | None = None) -> ChatResponse:
    return ChatResponse(
        session_id="s",
        reply="收到",
        status=TurnStatus.decided,
        intent="x",
        decision=Decision(intents=["x"], agent=agent, function=function, params=params or {}, time_range=when),
    )


def perceive(response, recent=(), reasked=False):
    return perception().perceive(
        response,
        raw_input="我想三个月学会日语，帮我拆一下",
        source_message_id=SOURCE,
        question_id=QUESTION,
        recent=list(recent),
        now=NOW,
        reasked=reasked,
    )


def range_for(agent: str, function: str, when: TimeRange, raw_input: str) -> AgentTimeRange:
    """The time range perception decides for a turn routed to `agent.function` with the time `when` said."""
    result = perception().perceive(
        decided(agent, function, {"when": when.model_dump()}, when),
        raw_input=raw_input,
        source_message_id=SOURCE,
        question_id=QUESTION,
        recent=[],
        now=NOW,
    )
    assert isinstance(result, Decided)
    return result.decision.time_range


def test_a_decided_agent_turn_with_its_own_time_is_a_decision_with_that_range():
    when = TimeRange(
        start="2026-12-02T15:00:00+08:00", end="2026-12-02T16:00:00+08:00", text="明天下午三点", all_day=False
    )
    result = perceive(decided("schedule_todo_agent", "create", {"when": when.model_dump()}, when))
    assert isinstance(result, Decided)
    d = result.decision
    assert (d.target_agent_name, d.target_function_name, d.source_message_id) == (
        "schedule_todo_agent",
        "create",
        SOURCE,
    )
    assert d.time_range.start_at == datetime(2026, 12, 2, 15, tzinfo=TZ) and d.time_range.source == "user_explicit"


def test_no_time_said_takes_the_functions_default_range():
    result = perceive(decided("review_agent", "review"))
    assert isinstance(result, Decided)
    assert result.decision.time_range.source == "system_default"
    assert result.decision.time_range.start_at == datetime(2026, 11, 25, tzinfo=TZ)
    assert result.decision.time_range.end_at == datetime(2026, 12, 2, tzinfo=TZ)
    assert default_range(CFG, "unknown_agent", "x", NOW).start_at == datetime(2026, 11, 24, tzinfo=TZ)


def test_a_missing_slot_is_a_single_clarification_and_asked_again_is_invalid_answer():
    asking = ChatResponse(
        session_id="s",
        reply="打算安排在什么时候？",
        status=TurnStatus.waiting_slot,
        intent="schedule_create",
        pending_slots=["when"],
    )
    first = perceive(asking)
    assert isinstance(first, Clarify) and first.request.mode == "single"
    assert first.request.reason == "missing_required_params"
    assert first.request.questions[0].question_id == str(QUESTION) and first.request.questions[0].field_name == "when"
    assert perceive(asking, reasked=True).request.reason == "invalid_answer"


@pytest.mark.parametrize(
    ("said", "start", "end"),
    [
        # NOW is Tuesday 10:00: a bare 周一 reads as the next one, 早上 as tomorrow's; feedback is about the last ones
        ("周一", "2026-12-07T00:00:00+08:00", "2026-11-30T00:00:00+08:00"),
        ("早上", "2026-12-02T06:00:00+08:00", "2026-12-01T06:00:00+08:00"),
        ("下周一", "2026-12-07T00:00:00+08:00", "2026-12-07T00:00:00+08:00"),  # said ahead: kept
        ("周一下午", "2026-12-07T13:00:00+08:00", "2026-11-30T13:00:00+08:00"),  # 下午 is no 下 of a week
    ],
)
def test_feedback_reads_a_bare_time_as_the_last_one(said, start, end):
    when = TimeRange(start=start, end=start[:11] + "23:59:00+08:00", text=said, all_day=True)
    assert range_for("feedback_agent", "record", when, f"{said}的跑步没去").start_at == datetime.fromisoformat(end)


def test_a_disambiguation_is_a_question_that_offers_its_options():
    asking = ChatResponse(
        session_id="s",
        reply="您是想查询日程还是新建日程？",
        status=TurnStatus.clarify,
        intent="schedule_query",
        options=[
            ClarifyOption(value="schedule_query", label="查询日程"),
            ClarifyOption(value="schedule_create", label="新建日程"),
        ],
    )
    result = perceive(asking)
    assert isinstance(result, Clarify) and result.question_type == "disambiguation"
    question = result.request.questions[0]
    assert question.field_name == "intent"
    assert question.options == [
        {"value": "schedule_query", "label": "查询日程"},
        {"value": "schedule_create", "label": "新建日程"},
    ]


def test_a_split_asks_every_missing_question_at_once_and_reuses_recent_answers():
    result = perceive(decided("long_task_split_agent", "split"))
    assert isinstance(result, Clarify) and result.request.mode == "batch"
    assert [q.field_name for q in result.request.questions] == [
        "deadline",
        "weekly_hours",
    ]  # goal read from the request
    answered = ConversationMessageDTO(
        id=uuid.uuid4(),
        user_id=uuid.uuid4(),
        message_index=3,
        role="user",
        modality="text",
        raw_content="每周十小时",
        source_url=None,
        created_at=NOW,
        metadata=ConversationMessageMetadata(
            message_kind="clarification_answer",
            client_message_id="c",
            reply_to_question_id=uuid.uuid4(),
            target_agent_name="long_task_split_agent",
            parsed_params={"weekly_hours": 10},
        ),
    )
    again = perceive(decided("long_task_split_agent", "split"), recent=[answered])
    assert [q.field_name for q in again.request.questions] == ["deadline"]
    assert again.known["weekly_hours"] == 10


def test_batch_answers_are_read_per_field_and_the_bad_ones_stay_missing():
    read, missing = perception().read_answers(
        ["deadline", "weekly_hours"], {"deadline": "明年三月前", "weekly_hours": "很多"}, None, NOW
    )
    assert read == {"deadline": "2027-03-01T00:00:00+08:00"} and missing == ["weekly_hours"]
    read, missing = perception().read_answers(["weekly_hours"], {}, "每周10个小时吧", NOW)
    assert read == {"weekly_hours": 10} and missing == []


@pytest.mark.parametrize("status", [TurnStatus.completed, TurnStatus.fallback])
def test_other_turns_are_shown_as_they_are(status):
    result = perceive(ChatResponse(session_id="s", reply="好的，车窗已打开。", status=status, result={"success": True}))
    assert isinstance(result, Shown) and result.reply == "好的，车窗已打开。"


def test_a_move_acts_on_the_time_before_its_marker_and_an_unslotted_time_is_still_read():
    merged = TimeRange(
        start="2026-12-03T10:00:00+08:00",
        end="2026-12-03T11:00:00+08:00",
        text="明天的组会改到后天上午十点",
        all_day=False,
    )
    result = perception().perceive(
        decided("schedule_todo_agent", "update", {"when": merged.model_dump()}, merged),
        raw_input="把明天的组会改到后天上午十点",
        source_message_id=SOURCE,
        question_id=QUESTION,
        recent=[],
        now=NOW,
    )
    assert result.decision.time_range.start_at == datetime(2026, 12, 2, tzinfo=TZ)
    assert result.decision.time_range.end_at == datetime(2026, 12, 3, tzinfo=TZ)
    week = perception().perceive(
        decided("review_agent", "review"),
        raw_input="帮我复盘一下这周",
        source_message_id=SOURCE,
        question_id=QUESTION,
        recent=[],
        now=NOW,
    )
    assert week.decision.time_range.source == "user_explicit"
    assert week.decision.time_range.start_at == datetime(2026, 11, 30, tzinfo=TZ)


EXTRA = {
    "input": {"client_message_id": "c0"},
    "clarification_answer": {"client_message_id": "c2", "reply_to_question_id": QUESTION},
    "clarification_question": {"question_status": "answered", "expires_at": NOW + timedelta(minutes=10)},
}


def _message(role, kind, text, minutes):
    return ConversationMessageDTO(
        id=uuid.uuid4(),
        user_id=uuid.uuid4(),
        message_index=minutes + 1,
        role=role,
        modality="text" if role == "user" else None,
        raw_content=text,
        source_url=None,
        metadata=ConversationMessageMetadata(message_kind=kind, **EXTRA.get(kind, {})),
        created_at=NOW + timedelta(minutes=minutes),
    )


def test_an_answer_completes_the_request_it_answered():
    """提醒我交房租 asked when; 明天上午十点 answered: the decision reads both, so the agent finds the title."""
    recent = [
        _message("user", "input", "提醒我交房租", 0),
        _message("assistant", "clarification_question", "打算安排在什么时候？", 1),
        _message("user", "clarification_answer", "明天上午十点", 2),
    ]
    when = TimeRange(
        start="2026-12-02T10:00:00+08:00", end="2026-12-02T11:00:00+08:00", text="明天上午十点", all_day=False
    )
    result = perception().perceive(
        decided("schedule_todo_agent", "create", {"when": when.model_dump()}, when),
        raw_input="明天上午十点",
        source_message_id=SOURCE,
        question_id=QUESTION,
        recent=recent,
        now=NOW,
        reasked=True,
    )
    assert isinstance(result, Decided) and result.decision.raw_input == "提醒我交房租，明天上午十点"
    assert result.decision.time_range.start_at == datetime(2026, 12, 2, 10, tzinfo=TZ)
    plain = perception().perceive(
        decided("schedule_todo_agent", "create", {"when": when.model_dump()}, when),
        raw_input="明天上午十点提醒我交房租",
        source_message_id=SOURCE,
        question_id=QUESTION,
        recent=recent[:1],
        now=NOW,
    )
    assert plain.decision.raw_input == "明天上午十点提醒我交房租", "a request said at once is read as said"


def test_several_agent_steps_are_decided_in_order_each_from_its_own_clause():
    from protocol.workflow import Workflow, WorkflowStep, WorkflowType

    response = decided("feedback_agent", "record")
    response.workflow = Workflow(
        type=WorkflowType.sequence,
        steps=[
            WorkflowStep(
                step=1, step_id="s1", intent_id="f", agent="feedback_agent", action="record", clause="跑步完成了"
            ),
            WorkflowStep(
                step=2, step_id="s2", intent_id="r", agent="review_agent", action="review", clause="帮我复盘这周"
            ),
        ],
    )
    got = perception().perceive(
        response,
        raw_input="跑步完成了，然后帮我复盘这周",
        source_message_id=SOURCE,
        question_id=QUESTION,
        recent=[],
        now=NOW,
    )
    assert isinstance(got, Decided)
    steps = [got.decision, *got.then]
    assert [(d.target_agent_name, d.target_function_name, d.raw_input) for d in steps] == [
        ("feedback_agent", "record", "跑步完成了"),
        ("review_agent", "review", "帮我复盘这周"),
    ]
    week = steps[1].time_range
    assert week.source == "user_explicit" and (week.end_at - week.start_at).days == 7


@pytest.mark.parametrize(
    ("raw", "start", "end"),
    [
        # NOW is Tuesday 10:00: what was left behind on 周一 is last Monday's; a replan of what comes is not moved
        ("周一拖下来的事情重新安排下", "2026-12-07T00:00:00+08:00", "2026-11-30T00:00:00+08:00"),
        ("周一落下的任务往后顺一顺", "2026-12-07T00:00:00+08:00", "2026-11-30T00:00:00+08:00"),
        ("周一欠下的事帮我重新找时间", "2026-12-07T00:00:00+08:00", "2026-11-30T00:00:00+08:00"),
        ("把周一的安排重新排一下", "2026-12-07T00:00:00+08:00", "2026-12-07T00:00:00+08:00"),
    ],
)
def test_a_replan_of_what_was_left_behind_reads_a_bare_weekday_as_the_last_one(raw, start, end):
    when = TimeRange(start=start, end=start[:11] + "23:59:00+08:00", text="周一", all_day=True)
    assert range_for("replan_agent", "replan", when, raw).start_at == datetime.fromisoformat(end)


@pytest.mark.parametrize(
    ("raw", "start", "end"),
    [
        # NOW is Tuesday 10:00: a review of 周一 is of the day that has been; 下周一 is said ahead and kept
        ("周一那天做得怎么样，复盘一下", "2026-12-07T00:00:00+08:00", "2026-11-30T00:00:00+08:00"),
        ("帮我复盘下周一", "2026-12-07T00:00:00+08:00", "2026-12-07T00:00:00+08:00"),
    ],
)
def test_a_review_reads_a_bare_weekday_as_the_last_one(raw, start, end):
    text = "下周一" if "下周一" in raw else "周一"
    when = TimeRange(start=start, end=start[:11] + "23:59:00+08:00", text=text, all_day=True)
    assert range_for("review_agent", "review", when, raw).start_at == datetime.fromisoformat(end)


def test_a_cancel_acts_on_the_whole_day_it_names():
    when = TimeRange(start="2026-12-02T18:00:00+08:00", end="2026-12-03T00:00:00+08:00", text="明晚", all_day=False)
    span = range_for("schedule_todo_agent", "delete", when, "明晚的瑜伽取消掉")
    assert (span.start_at, span.end_at) == (datetime(2026, 12, 2, tzinfo=TZ), datetime(2026, 12, 3, tzinfo=TZ))
    at_nine = TimeRange(
        start="2026-12-02T09:00:00+08:00", end="2026-12-02T10:00:00+08:00", text="明天上午九点", all_day=False
    )
    assert range_for("schedule_todo_agent", "delete", at_nine, "明天上午九点的选题会取消掉").start_at == datetime(
        2026, 12, 2, 9, tzinfo=TZ
    )
