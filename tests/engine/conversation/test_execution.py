"""Execution: facts read for the function, scope resolved, the registry's agent called, its answer classified."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from engine.conversation.execution import AgentFailed, Execution, NeedsSelection, Proposal, Shown
from protocol.agents import (
    AgentFunctionDefinition,
    AgentResponseEnvelope,
    AgentTimeRange,
    CandidateItem,
    ExecutionLayerInput,
)

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 12, 1, 10, tzinfo=TZ)
USER = uuid.uuid4()


def item(title: str, hour: int) -> CandidateItem:
    start = datetime(2026, 12, 2, hour, tzinfo=TZ)
    return CandidateItem(
        id=uuid.uuid4(), title=title, item_type="schedule", start_at=start, end_at=start + timedelta(hours=1)
    )


class FakeFacts:
    def __init__(self, items):
        self._items = items
        self.reads: list[str] = []

    async def items(self, user_id, start_at, end_at):
        self.reads.append("items")
        return [i for i in self._items if start_at <= i.start_at < end_at]

    async def calendar(self, user_id, start_at, end_at):
        return []

    async def feedbacks(self, user_id, start_at, end_at):
        self.reads.append("feedbacks")
        return []

    async def profile(self, user_id):
        self.reads.append("profile")
        return {}


class FakeAgents:
    def __init__(self, answer: AgentResponseEnvelope, needs_candidates=True):
        self.answer = answer
        self.needs = needs_candidates
        self.calls = []

    def definition(self, agent, function):
        return AgentFunctionDefinition(
            agent_name=agent, function_name=function, required_fields=[], description="", needs_candidates=self.needs
        )

    async def dispatch(self, agent, function, inp):
        self.calls.append(inp)
        return self.answer


def envelope(**kw) -> AgentResponseEnvelope:
    base = dict(
        agent_name="schedule_todo_agent",
        function_name="delete",
        isNeedUser=True,
        isDisplayResult=True,
        isError=False,
        result={"reply": "删除「开会」"},
    )
    return AgentResponseEnvelope(**{**base, **kw})


def inp(raw: str, function: str = "delete", agent: str = "schedule_todo_agent") -> ExecutionLayerInput:
    return ExecutionLayerInput(
        target_agent_name=agent,
        target_function_name=function,
        raw_input=raw,
        parsed_params={"when": {"text": "明天"}},
        source_message_id=uuid.uuid4(),
        recent_messages=[],
        time_range=AgentTimeRange(
            start_at=datetime(2026, 12, 2, tzinfo=TZ), end_at=datetime(2026, 12, 3, tzinfo=TZ), source="user_explicit"
        ),
    )


async def run(execution, request, **kw):
    stages = []

    async def processing(stage):
        stages.append(stage)

    outcome = await execution.run(request, USER, NOW, processing=processing, **kw)
    return outcome, stages


async def test_one_named_item_goes_to_the_agent_and_its_write_is_a_proposal():
    meeting, gym = item("开会", 15), item("健身", 18)
    agents = FakeAgents(envelope(db_action={"action": "delete"}))
    outcome, stages = await run(Execution(agents, FakeFacts([meeting, gym])), inp("把明天的开会删了"))
    assert isinstance(outcome, Proposal) and outcome.db_action == {"action": "delete"}
    assert [c.id for c in agents.calls[0].candidate_items] == [meeting.id]
    assert stages == ["resolving_scope", "calling_agent"]


async def test_an_ambiguous_reference_asks_the_user_and_calls_no_agent():
    a, b = item("组会", 15), item("组会", 17)
    agents = FakeAgents(envelope())
    outcome, stages = await run(Execution(agents, FakeFacts([a, b])), inp("把明天的组会删了"))
    assert isinstance(outcome, NeedsSelection) and {c.id for c in outcome.candidates} == {a.id, b.id}
    assert agents.calls == [] and stages == ["resolving_scope"]


async def test_the_selected_item_is_the_only_candidate():
    a, b = item("组会", 15), item("组会", 17)
    agents = FakeAgents(envelope(db_action={"action": "delete"}))
    outcome, _ = await run(Execution(agents, FakeFacts([a, b])), inp("把明天的组会删了"), selected=[b.id])
    assert isinstance(outcome, Proposal) and [c.id for c in agents.calls[0].candidate_items] == [b.id]


async def test_nothing_in_range_is_not_found_without_an_agent_call():
    agents = FakeAgents(envelope())
    outcome, _ = await run(Execution(agents, FakeFacts([])), inp("把明天的开会删了"))
    assert isinstance(outcome, Shown) and outcome.status == "not_found" and agents.calls == []


async def test_review_reads_feedback_and_shows_the_agents_text():
    agents = FakeAgents(
        envelope(agent_name="review_agent", function_name="review", isNeedUser=False, result={"reply": "本周完成 1 项"})
    )
    facts = FakeFacts([item("开会", 15)])
    outcome, _ = await run(Execution(agents, facts), inp("复盘一下", "review", "review_agent"))
    assert isinstance(outcome, Shown) and outcome.reply == "本周完成 1 项"
    assert facts.reads == ["items", "feedbacks"]


async def test_an_agent_error_is_a_failure():
    agents = FakeAgents(envelope(isError=True, error_message="没听出要改到什么时候"), needs_candidates=False)
    outcome, _ = await run(Execution(agents, FakeFacts([])), inp("改一下", "create"))
    assert isinstance(outcome, AgentFailed) and outcome.message == "没听出要改到什么时候"
