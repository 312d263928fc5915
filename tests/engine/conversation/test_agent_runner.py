"""The agent runner: the agent steps of one message in order; a write pauses the run until its decision; a failed,
empty or declined step stops the steps after it and keeps those before; the summary says what each step did."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from engine.conversation.agent_runner import AgentRunner, decided, start, summary_reply
from engine.conversation.execution import AgentFailed, Proposal, Shown
from protocol.agents import AgentFunctionDefinition, AgentResponseEnvelope, AgentTimeRange, ExecutionLayerInput

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 12, 1, 10, tzinfo=TZ)
USER = uuid.uuid4()


class NoFacts:
    async def items(self, user_id, start_at, end_at):
        return []

    async def calendar(self, user_id, start_at, end_at):
        return []

    async def feedbacks(self, user_id, start_at, end_at):
        return []

    async def profile(self, user_id):
        return {}


class ScriptedAgents:
    """Each (agent, function) answers its scripted envelope; `calls` records the order they were called in."""

    def __init__(self, answers: dict[tuple[str, str], AgentResponseEnvelope]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, str]] = []

    def definition(self, agent, function):
        return AgentFunctionDefinition(
            agent_name=agent, function_name=function, required_fields=[], description="", needs_candidates=False
        )

    async def dispatch(self, agent, function, inp):
        self.calls.append((agent, function, inp.raw_input))
        return self.answers[(agent, function)]


def answer(
    agent: str, function: str, *, write: bool = False, error: bool = False, reply: str = "好"
) -> AgentResponseEnvelope:
    return AgentResponseEnvelope(
        agent_name=agent,
        function_name=function,
        isNeedUser=write,
        isDisplayResult=True,
        isError=error,
        result={"reply": reply},
        db_action={"action": "create", "preview_text": reply} if write else None,
        error_message="出错了" if error else None,
    )


def step(agent: str, function: str, raw: str) -> ExecutionLayerInput:
    return ExecutionLayerInput(
        target_agent_name=agent,
        target_function_name=function,
        raw_input=raw,
        parsed_params={},
        source_message_id=uuid.uuid4(),
        recent_messages=[],
        time_range=AgentTimeRange(start_at=NOW, end_at=NOW + timedelta(days=7), source="system_default"),
    )


FEEDBACK, REVIEW = ("feedback_agent", "record"), ("review_agent", "review")


async def test_a_write_then_a_review_run_in_the_order_said_the_review_only_after_the_decision():
    agents = ScriptedAgents(
        {
            FEEDBACK: answer(*FEEDBACK, write=True, reply="记录：跑步完成"),
            REVIEW: answer(*REVIEW, reply="本周完成 1 项"),
        }
    )
    runner = AgentRunner(agents, NoFacts())
    workflow = start([step(*FEEDBACK, "跑步完成了"), step(*REVIEW, "帮我复盘这周")])
    first = await runner.run(workflow, USER, NOW)
    assert first.paused and isinstance(first.ran[-1][1], Proposal)
    assert [c[0] for c in agents.calls] == ["feedback_agent"]  # the review waits for the write's decision
    decided(workflow, first.ran[-1][0], applied=True, reply="已保存。")
    second = await runner.run(workflow, USER, NOW)
    assert not second.paused and isinstance(second.ran[-1][1], Shown)
    assert [c[:2] for c in agents.calls] == [FEEDBACK, REVIEW]
    assert [c[2] for c in agents.calls] == ["跑步完成了", "帮我复盘这周"]  # each step its own clause
    assert [(r.step, r.agent_name, r.status) for r in workflow.reports] == [
        (1, "feedback_agent", "applied"),
        (2, "review_agent", "completed"),
    ]
    assert summary_reply(workflow) == "这条消息共 2 步：1. 反馈：已保存；2. 复盘：已完成。"


async def test_a_declined_write_in_the_middle_keeps_the_earlier_applied_and_runs_nothing_after():
    create = ("schedule_todo_agent", "create")
    agents = ScriptedAgents({create: answer(*create, write=True), REVIEW: answer(*REVIEW)})
    runner = AgentRunner(agents, NoFacts())
    workflow = start([step(*create, "明天九点开会"), step(*create, "明天十点健身"), step(*REVIEW, "复盘这周")])
    run = await runner.run(workflow, USER, NOW)
    decided(workflow, run.ran[-1][0], applied=True, reply="已保存。")
    run = await runner.run(workflow, USER, NOW)
    assert run.paused and run.ran[-1][0].raw_input == "明天十点健身"
    decided(workflow, run.ran[-1][0], applied=False, reply="好的，这一步没有保存。")
    assert workflow.steps == []  # the decline stopped the workflow
    assert [r.status for r in workflow.reports] == ["applied", "declined", "not_run"]
    assert [c[0] for c in agents.calls] == ["schedule_todo_agent", "schedule_todo_agent"]  # the review never ran
    reply = summary_reply(workflow)
    assert "1. 日程：已保存" in reply and "2. 日程：你没有确认，未保存" in reply and "3. 复盘：未执行" in reply
    assert "前面已完成的步骤保留不变" in reply


async def test_a_failed_step_stops_the_steps_after_it():
    agents = ScriptedAgents({REVIEW: answer(*REVIEW, error=True), FEEDBACK: answer(*FEEDBACK, write=True)})
    workflow = start([step(*REVIEW, "复盘"), step(*FEEDBACK, "跑步完成了")])
    run = await AgentRunner(agents, NoFacts()).run(workflow, USER, NOW)
    assert isinstance(run.ran[-1][1], AgentFailed) and not run.paused
    assert [r.status for r in workflow.reports] == ["failed", "not_run"] and len(agents.calls) == 1


async def test_a_single_step_is_a_workflow_of_one_and_shows_as_it_is():
    agents = ScriptedAgents({REVIEW: answer(*REVIEW, reply="本周完成 3 项")})
    workflow = start([step(*REVIEW, "复盘这周")])
    run = await AgentRunner(agents, NoFacts()).run(workflow, USER, NOW)
    assert workflow.total == 1 and isinstance(run.ran[0][1], Shown) and run.ran[0][1].reply == "本周完成 3 项"
