"""scheduling_agent through the registry and execution (busy times from the user's items and calendars), and the
route that hands planning requests to it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from uuid import uuid4
from zoneinfo import ZoneInfo

from engine.agents import AgentRegistry
from engine.conversation.execution import Execution, Proposal
from engine.scheduling.route import routed
from protocol.agents import AgentTimeRange, CalendarFact, CandidateItem, ExecutionLayerInput
from protocol.http_chat import ChatResponse, Decision, TurnStatus
from protocol.rest import WriteRequestCreate

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=TZ)
USER = uuid4()


class Facts:
    """The store reads execution makes, over a fixed list of items (the store-backed test reads PostgreSQL)."""

    def __init__(self, items: list[CandidateItem], profile: dict, calendar: list[CalendarFact] = ()) -> None:
        self._items, self._profile, self._calendar, self.ranges = items, profile, list(calendar), []

    async def items(self, user_id, start_at, end_at):
        self.ranges.append((start_at, end_at))
        return [i for i in self._items if i.start_at and i.start_at < end_at and (i.end_at or i.start_at) >= start_at]

    async def feedbacks(self, user_id, start_at, end_at):
        return []

    async def profile(self, user_id):
        return self._profile

    async def calendar(self, user_id, start_at, end_at):
        return [e for e in self._calendar if e.start_at < end_at and e.end_at > start_at]


def _step(text: str) -> ExecutionLayerInput:
    return ExecutionLayerInput(
        target_agent_name="scheduling_agent",
        target_function_name="plan",
        parsed_params={},
        time_range=AgentTimeRange(start_at=NOW, end_at=NOW + timedelta(days=7), source="system_default"),
        raw_input=text,
        source_message_id=uuid4(),
        recent_messages=[],
    )


def _item(title: str, start: datetime, hours: float) -> CandidateItem:
    return CandidateItem(
        id=uuid4(), title=title, item_type="schedule", start_at=start, end_at=start + timedelta(hours=hours)
    )


def test_a_plan_is_a_goal_split_whose_subtasks_are_the_free_slots():
    busy = [_item("组会", NOW.replace(hour=10), 3), _item("上课", NOW.replace(hour=14), 4)]
    facts = Facts(busy, {"working_hours": {"start": "10:00", "end": "20:00"}})
    outcome = asyncio.run(Execution(AgentRegistry.default(), facts).run(_step("这周想约三次羽毛球"), USER, NOW))
    assert isinstance(outcome, Proposal)
    write = WriteRequestCreate.model_validate(outcome.db_action)
    assert (write.action, write.target_type) == ("goal_split", "long_goal")
    draft = outcome.response.result["scheduling"]
    assert draft["task_level"] == "L2" and len(draft["slots"]) == 3
    subtasks = write.payload["subtasks"]
    assert [(s["start_at"], s["end_at"]) for s in subtasks] == [(s["start_at"], s["end_at"]) for s in draft["slots"]]
    first = datetime.fromisoformat(subtasks[0]["start_at"])
    assert first == NOW.replace(hour=13)  # 10–13 and 14–18 are taken today; 13:00 fits the first hour
    assert facts.ranges  # the busy times were read for the request's window


def test_a_busy_calendar_event_is_no_free_slot_and_a_transparent_one_is():
    busy = [_item("组会", NOW.replace(hour=10), 3), _item("上课", NOW.replace(hour=14), 4)]
    hours = {"working_hours": {"start": "10:00", "end": "20:00"}}

    def first_slot(calendar: list[CalendarFact]) -> datetime:
        facts = Facts(busy, hours, calendar)
        outcome = asyncio.run(Execution(AgentRegistry.default(), facts).run(_step("这周想约三次羽毛球"), USER, NOW))
        return datetime.fromisoformat(outcome.response.result["scheduling"]["slots"][0]["start_at"])

    def event(busy: bool) -> CalendarFact:
        start = NOW.replace(hour=13)
        return CalendarFact(
            title="牙医", kind="event", start_at=start, end_at=start + timedelta(hours=1), busy=busy, source_name="日历"
        )

    assert first_slot([event(busy=False)]) == NOW.replace(hour=13)  # transparent: 13:00 is still free
    assert first_slot([event(busy=True)]) == NOW.replace(hour=18)  # the dentist takes 13–14; the evening is next


def test_an_action_is_one_schedule_item_with_its_start_instructions():
    facts = Facts([], {})
    outcome = asyncio.run(Execution(AgentRegistry.default(), facts).run(_step("马上先把作业交了"), USER, NOW))
    assert isinstance(outcome, Proposal)
    write = WriteRequestCreate.model_validate(outcome.db_action)
    assert (write.action, write.payload["item_type"]) == ("create", "schedule")
    assert "开始" in write.payload["description"]
    assert outcome.response.result["scheduling"]["task_level"] == "L3"


def _decided(agent: str, function: str, intent: str, status=TurnStatus.decided) -> ChatResponse:
    return ChatResponse(
        session_id="s",
        reply="收到",
        status=status,
        intent=intent,
        decision=Decision(intents=[intent], agent=agent, function=function),
    )


def test_planning_requests_go_to_the_scheduling_chain_with_the_classifier_signal():
    turn = routed(_decided("schedule_todo_agent", "create", "schedule_create"), "打算这周每天晚上写一小时小说", NOW)
    assert turn.decision.agent == "scheduling_agent" and turn.decision.function == "plan"
    assert turn.decision.params["classifier_intent"] == "schedule_create"
    fallback = ChatResponse(session_id="s", reply="抱歉", status=TurnStatus.fallback)
    assert routed(fallback, "想学做蛋糕", NOW).decision.agent == "scheduling_agent"


def test_bookings_at_a_said_time_long_goals_and_other_agents_stay():
    create = _decided("schedule_todo_agent", "create", "schedule_create")
    assert routed(create, "明天下午三点去牙医复诊", NOW) is create
    split = _decided("long_task_split_agent", "split", "long_task_split")
    assert routed(split, "想三个月学会日语帮我拆一下", NOW) is split
    assert routed(split, "我想半年内把英语口语练好", NOW) is split  # a frame longer than two weeks: a long goal
    review = _decided("review_agent", "review", "review")
    assert routed(review, "我想复盘一下这周", NOW) is review
    waiting = _decided("schedule_todo_agent", "create", "schedule_create", TurnStatus.waiting_slot)
    assert routed(waiting, "想学做蛋糕", NOW) is waiting
