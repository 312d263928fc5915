"""Several agents in one message, between turns: the workflow kept with the question that paused it (a write's
confirmation, a selection), and the steps a decision resumes — in the decision's frame, after its commit, so the
steps after see what the decision applied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.conversation.agent_runner import decided, stop, summary_reply
from engine.deadline import Deadline
from protocol.agent_turn import AgentWorkflowState
from protocol.agents import ExecutionLayerInput
from protocol.ws import ExecutionResultPayload
from serve_app.agents.context import Caller, summary
from serve_app.agents.log import Outbox, Send

if TYPE_CHECKING:  # the agent runs the steps; this module is called from its frames
    from serve_app.agents.agent import ConversationAgent

KEY, STEP = "agent_workflow", "agent_step"


def kept(workflow: AgentWorkflowState, step: ExecutionLayerInput) -> dict[str, Any]:
    """What a paused step's message keeps (without the recent messages, read again when it resumes)."""
    if workflow.total <= 1:
        return {}
    return {
        KEY: workflow.model_dump(mode="json", exclude={"steps": {"__all__": {"recent_messages"}}}),
        STEP: step.model_dump(mode="json", exclude={"recent_messages"}),
    }


def _step(raw: dict[str, Any]) -> ExecutionLayerInput:
    return ExecutionLayerInput.model_validate({**raw, "recent_messages": raw.get("recent_messages", [])})


def restored(parsed_params: dict[str, Any]) -> tuple[AgentWorkflowState, ExecutionLayerInput] | None:
    """The workflow a paused step belongs to and the step itself; None for a message of one step."""
    raw = parsed_params.get(KEY)
    if not isinstance(raw, dict) or not isinstance(parsed_params.get(STEP), dict):
        return None
    steps = [_step(s) for s in raw.get("steps", [])]
    workflow = AgentWorkflowState.model_validate({**raw, "steps": []})
    workflow.steps = steps
    return workflow, _step(parsed_params[STEP])


async def report_summary(
    out: Outbox, workflow: AgentWorkflowState, deadline: Deadline, name: str, *, tail: str = ""
) -> None:
    """The workflow ended: one result that says what each step did (and then `tail`: what was not done)."""
    reply = summary_reply(workflow) + tail
    await out.emit(
        "execution.result",
        ExecutionResultPayload(
            reply=reply,
            result={KEY: [r.model_dump(mode="json") for r in workflow.reports]},
            turn=summary("completed", reply, deadline),
        ),
        out.message(name, "assistant", reply, message_kind="execution_result"),
    )


async def resume(
    agent: ConversationAgent,
    caller: Caller,
    *,
    parsed_params: dict[str, Any],
    applied: bool,
    reply: str,
    key: str,
    first_seq: int,
    deadline: Deadline,
    send: Send,
) -> None:
    """After a paused step's decision (committed): the steps after it, or, when none is left or it was declined,
    the workflow's summary."""
    found = restored(parsed_params)
    if found is None:
        return
    workflow, step = found
    decided(workflow, step, applied=applied, reply=reply)
    out = Outbox(caller.user.id, key, send, first_seq=first_seq)
    if not workflow.steps:
        await report_summary(out, workflow, deadline, "summary")
        await agent.commit(out, deadline)
        return
    recent = await agent.recent(caller, deadline)
    workflow.steps = [s.model_copy(update={"recent_messages": recent}) for s in workflow.steps]
    await agent.execute(caller, out, workflow, deadline)


def cancelled(parsed_params: dict[str, Any]) -> AgentWorkflowState | None:
    """A selection cancelled inside a workflow: that step is declined and the workflow stops."""
    found = restored(parsed_params)
    if found is None:
        return None
    workflow, step = found
    decided(workflow, step, applied=False, reply="")
    stop(workflow)
    return workflow
