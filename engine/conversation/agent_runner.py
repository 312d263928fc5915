"""The agent runner: the agent steps of one message in the order the user said them, each through `Execution`.

A step that proposes a write or needs a selection pauses the run: the caller puts the write behind the gate (or asks
which item) and keeps the `AgentWorkflowState` with it; the decision resumes the run with the steps after. A step
that fails, finds nothing or is declined stops the run; the steps before it stay as they ran, and the steps after
it are reported `not_run`. Plain async Python: both transports run it, and the tests run it over fakes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from engine.conversation.execution import (
    AgentFailed,
    Agents,
    Execution,
    Facts,
    NeedsSelection,
    Outcome,
    Processing,
    Proposal,
)
from protocol.agent_turn import AgentWorkflowState, StepReport, StepState
from protocol.agents import ExecutionLayerInput

AGENT_LABELS = {
    "schedule_todo_agent": "日程",
    "feedback_agent": "反馈",
    "replan_agent": "重新安排",
    "review_agent": "复盘",
    "long_task_split_agent": "拆解目标",
    "scheduling_agent": "规划草案",
}
STATE_LABELS: dict[StepState, str] = {
    "applied": "已保存",
    "completed": "已完成",
    "not_found": "没有找到要处理的安排",
    "declined": "你没有确认，未保存",
    "failed": "没有成功",
    "not_run": "未执行",
}
STOPS: frozenset[StepState] = frozenset({"not_found", "declined", "failed"})


async def _nothing(stage: str) -> None:
    return None


@dataclass
class Run:
    """What one call ran: each step's outcome in order (the last a `Proposal` or `NeedsSelection` when it paused)
    and the workflow as it stands (the steps after a pause, the reports so far)."""

    ran: list[tuple[ExecutionLayerInput, Outcome]] = field(default_factory=list)
    workflow: AgentWorkflowState = field(default_factory=AgentWorkflowState)

    @property
    def paused(self) -> bool:
        return bool(self.ran) and isinstance(self.ran[-1][1], Proposal | NeedsSelection)


def start(steps: list[ExecutionLayerInput]) -> AgentWorkflowState:
    return AgentWorkflowState(steps=steps, total=len(steps))


def report(workflow: AgentWorkflowState, step: ExecutionLayerInput, status: StepState, reply: str) -> None:
    workflow.reports.append(
        StepReport(
            step=len(workflow.reports) + 1,
            agent_name=step.target_agent_name,
            function_name=step.target_function_name,
            status=status,
            reply=reply,
        )
    )


def stop(workflow: AgentWorkflowState) -> None:
    """The steps still to run are reported not run."""
    for step in workflow.steps:
        report(workflow, step, "not_run", "")
    workflow.steps = []


def decided(workflow: AgentWorkflowState, step: ExecutionLayerInput, *, applied: bool, reply: str) -> None:
    """The paused step's write was confirmed (applied) or rejected; a rejection stops the workflow."""
    report(workflow, step, "applied" if applied else "declined", reply)
    if not applied:
        stop(workflow)


def summary_reply(workflow: AgentWorkflowState) -> str:
    """What each step did, in order, and that a stop kept what ran before it."""
    parts = [
        f"{r.step}. {AGENT_LABELS.get(r.agent_name, r.agent_name)}：{STATE_LABELS[r.status]}" for r in workflow.reports
    ]
    text = f"这条消息共 {workflow.total} 步：" + "；".join(parts) + "。"
    stopped = next((r for r in workflow.reports if r.status in STOPS), None)
    if stopped is not None and any(r.status in ("applied", "completed") for r in workflow.reports):
        text += f"第 {stopped.step} 步没有完成，前面已完成的步骤保留不变。"
    return text


class AgentRunner:
    def __init__(self, agents: Agents, facts: Facts) -> None:
        self._execution = Execution(agents, facts)

    async def run(
        self,
        workflow: AgentWorkflowState,
        user_id: UUID,
        now: datetime,
        *,
        selected: list[UUID] | None = None,
        processing: Processing = _nothing,
        before_step: Callable[[ExecutionLayerInput], Awaitable[None]] | None = None,
    ) -> Run:
        """Run the workflow's steps until one pauses or all ran; `selected` answers the first step's selection.
        `workflow` is updated in place and returned in the run."""
        run = Run(workflow=workflow)
        while workflow.steps:
            step = workflow.steps.pop(0)
            if before_step is not None:
                await before_step(step)
            outcome = await self._execution.run(step, user_id, now, selected=selected, processing=processing)
            selected = None
            run.ran.append((step, outcome))
            if isinstance(outcome, Proposal | NeedsSelection):
                return run
            if isinstance(outcome, AgentFailed):
                report(workflow, step, "failed", outcome.message)
            else:
                report(workflow, step, "completed" if outcome.status == "completed" else "not_found", outcome.reply)
            if workflow.reports[-1].status in STOPS:
                stop(workflow)
        return run
