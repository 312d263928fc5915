"""A turn that the main agent's sub-agents carried (seed 002) on the HTTP wire: what ChatResponse.agent holds, and
the state of several agents said in one message (an agent workflow) kept in the log between turns."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from protocol.agents import ExecutionLayerInput
from protocol.base import WireModel
from protocol.scheduling import SchedulingDraft
from protocol.ws import ClarificationPayload, SelectionRequiredPayload, WsEnvelope

StepState = Literal["applied", "completed", "not_found", "declined", "failed", "not_run"]
AgentTurnStatus = Literal[
    "waiting_confirmation",
    "waiting_selection",
    "waiting_clarification",
    "completed",
    "not_found",
    "applied",
    "rejected",
    "failed",
]


class StepReport(WireModel):
    """What one agent step of the message did."""

    step: int = Field(description="1-based position in the order the user said the steps.")
    agent_name: str
    function_name: str
    status: StepState = Field(
        description="applied (its write was confirmed), completed (it answered), not_found (nothing it could act on), "
        "declined (its write was rejected), failed, not_run (a step before it stopped the workflow)."
    )
    reply: str = ""


class AgentWorkflowState(WireModel):
    """Several agents in one message: the steps still to run, in order, and the reports of those that ran."""

    steps: list[ExecutionLayerInput] = Field(default_factory=list)
    reports: list[StepReport] = Field(default_factory=list)
    total: int = Field(default=1, description="How many agent steps the message had.")


class PendingWrite(WireModel):
    """A write request waiting behind the confirmation gate: confirm or reject it with fill-slots (确认 / 算了) or
    `POST /api/v1/write-requests/{write_request_id}/decide` with its `payload_hash`; nothing exists before that."""

    write_request_id: UUID
    preview_text: str
    payload_hash: str = Field(description="SHA-256 of the write; a decision may carry it to pin what it confirms.")
    expires_at: datetime
    confirmation_payload: dict[str, Any] = Field(default_factory=dict)


class AppliedWrite(WireModel):
    write_request_id: UUID
    applied_target_id: UUID | None = None
    message: str | None = None


class AgentTurn(WireModel):
    """What the sub-agents did in this turn, in the order it happened (the same events the WebSocket sends)."""

    status: AgentTurnStatus = Field(
        description="waiting_confirmation: `write_request` awaits a decision; waiting_selection: answer `selection` "
        "with fill-slots `slots.selected_candidate_ids` (or 取消); waiting_clarification: answer `clarification` with "
        "fill-slots `text` (single) or `slots` keyed by field_name (batch); completed / applied / rejected / failed: "
        "the turn ended so."
    )
    target_agent_name: str | None = None
    target_function_name: str | None = None
    write_request: PendingWrite | None = None
    applied: list[AppliedWrite] = Field(default_factory=list, description="Writes this turn's decision applied.")
    selection: SelectionRequiredPayload | None = Field(
        default=None, description="Scope resolution was ambiguous: the candidates to choose among."
    )
    clarification: ClarificationPayload | None = Field(
        default=None, description="A question (mode single) or a batch of questions (mode batch) to answer."
    )
    results: list[str] = Field(default_factory=list, description="Each step's reply, in order.")
    steps: list[StepReport] = Field(
        default_factory=list, description="Several agents in one message: what each step did so far."
    )
    scheduling: SchedulingDraft | None = Field(
        default=None,
        description="A planning request (seed 000's Scheduling chain): its `task_level`, the draft with its candidate "
        "`slots` (saved only when the write is confirmed) and the `questions` about what it leaves out.",
    )
    events: list[WsEnvelope] = Field(default_factory=list, description="The turn's events, as over the WebSocket.")
