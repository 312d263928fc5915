"""The response of a workflow turn, of one the client left, and leaving a paused workflow."""

from __future__ import annotations

from engine.pack import Pack
from engine.replies import decision, reply
from engine.session import SessionState, SessionStatus
from engine.workflow.turns import Outcome, WorkflowTurns
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.workflow import StepStatus


def workflow_response(session: SessionState, outcome: Outcome, pack: Pack, flows: WorkflowTurns) -> ChatResponse:
    """The turn's response: the workflow as it stands, the paused step's slots, the decision for agent-bound steps
    and seed 000's pipeline fields."""
    agent_steps = [s for s in outcome.workflow.steps if s.agent and s.status == StepStatus.pending]
    handed = None
    if outcome.status == TurnStatus.decided and agent_steps:
        params = {k: v for s in agent_steps for k, v in s.slots.items()}
        handed = decision([s.intent_id for s in agent_steps], params, pack.intent(agent_steps[0].intent_id))
    response = reply(session, outcome.status, outcome.reply, intent=outcome.intent, decision=handed)
    step = next(
        (s for s in outcome.workflow.steps if s.intent_id == outcome.intent and s.status != StepStatus.done), None
    )
    response.slots = dict(step.slots) if step is not None else {}
    response.pending_slots = outcome.pending_slots
    response.workflow = outcome.workflow.model_copy(deep=True)
    response.pipeline, response.pipeline_description = flows.wording.pipeline(outcome.workflow)
    return response


def gone_response(session: SessionState, said: str) -> ChatResponse:
    """The client went away before a plugin: the turn stops there, and what ran is committed with the session."""
    session.status, session.pending_slots = SessionStatus.stopped, []
    response = reply(session, TurnStatus.stopped, said, intent=session.current_intent)
    if session.workflow is not None:
        response.workflow = session.workflow.model_copy(deep=True)
    return response


def leave_workflow(session: SessionState) -> None:
    """The text is no answer to the paused workflow: it is left, and the text is a new turn."""
    if session.workflow is not None and session.status in (
        SessionStatus.waiting_slot,
        SessionStatus.waiting_confirmation,
    ):
        session.reset_task()
        session.status = SessionStatus.idle
    session.workflow = None
