"""A turn's events (the WebSocket's) as the HTTP turn response: `ChatResponse.agent`, its status and its reply."""

from __future__ import annotations

from typing import Any

from protocol.agent_turn import AgentTurn, AgentTurnStatus, AppliedWrite, PendingWrite, StepReport
from protocol.base import WireModel
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.scheduling import SchedulingDraft
from protocol.ws import ClarificationPayload, SelectionRequiredPayload, WsEnvelope
from serve_app.agents.steps import KEY

AGENT_EVENTS = frozenset(
    {"dialogue.decision", "execution.processing", "write.confirmation_required", "write.applied", "selection.required"}
)
TURN_STATUS: dict[AgentTurnStatus, TurnStatus] = {
    "waiting_confirmation": TurnStatus.waiting_confirmation,
    "waiting_selection": TurnStatus.clarify,
    "waiting_clarification": TurnStatus.clarify,
    "completed": TurnStatus.completed,
    "not_found": TurnStatus.completed,
    "applied": TurnStatus.completed,
    "rejected": TurnStatus.rejected,
    "failed": TurnStatus.fallback,
}


def _fields(model: type[WireModel], body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k in model.model_fields}


def agent_turn(events: list[WsEnvelope]) -> AgentTurn:
    """What the events say the sub-agents did; the status is the last thing that happened."""
    turn = AgentTurn(status="completed", events=events)
    for event in events:
        body: dict[str, Any] = event.payload
        kind = event.type
        if kind == "dialogue.decision":
            turn.target_agent_name, turn.target_function_name = body["target_agent_name"], body["target_function_name"]
        elif kind == "write.confirmation_required":
            turn.status, turn.write_request = (
                "waiting_confirmation",
                PendingWrite.model_validate(_fields(PendingWrite, body)),
            )
            turn.scheduling = SchedulingDraft.of(body) or turn.scheduling
        elif kind == "write.applied":
            turn.status, turn.write_request = "applied", None
            turn.applied.append(AppliedWrite.model_validate(_fields(AppliedWrite, body)))
        elif kind == "selection.required":
            turn.status, turn.selection = "waiting_selection", SelectionRequiredPayload.model_validate(body)
        elif kind == "dialogue.clarification":
            turn.status, turn.clarification = "waiting_clarification", ClarificationPayload.model_validate(body)
        elif kind == "execution.result":
            result = body.get("result")
            rejected = isinstance(result, dict) and result.get("status") == "rejected"
            turn.status = "rejected" if rejected else "completed" if turn.status != "applied" else "applied"
            if (body.get("turn") or {}).get("status") == "not_found":
                turn.status = "not_found"
            turn.results.append(body["reply"])
            turn.scheduling = SchedulingDraft.of(result) or turn.scheduling
            if isinstance(result, dict) and isinstance(result.get(KEY), list):
                turn.steps = [StepReport.model_validate(r) for r in result[KEY]]
                turn.status = "completed"
        elif kind == "execution.error":
            turn.status = "failed"
            turn.results.append(body["message"])
    return turn


def _reply(event: WsEnvelope) -> str:
    body = event.payload
    return str(body.get("reply") or body.get("preview_text") or body.get("question_text") or body.get("message") or "")


def answered(response: ChatResponse | None, events: list[WsEnvelope], session_id: str | None) -> ChatResponse:
    """The engine's response with what the agents did; a turn that ran no agent keeps the engine's response as it
    is. `response` is None for a message answered already: its stored events make the response."""
    shown = [e for e in events if e.type != "execution.processing"]
    if response is not None and not any(e.type in AGENT_EVENTS for e in events):
        if any(e.type == "dialogue.clarification" for e in events):  # the engine's own question, or a batch
            response = response.model_copy(update={"agent": agent_turn(events)})
            if response.status not in (TurnStatus.waiting_slot, TurnStatus.waiting_confirmation, TurnStatus.clarify):
                response.status, response.reply = TurnStatus.clarify, _reply(shown[-1])
        return response
    turn = agent_turn(events)
    base = response or ChatResponse(session_id=session_id or "", reply="", status=TurnStatus.completed)
    base = base.model_copy(update={"agent": turn, "status": TURN_STATUS[turn.status]})
    if shown:
        base.reply = _reply(shown[-1])
    return base
