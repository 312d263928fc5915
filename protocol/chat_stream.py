"""The chat-stream NDJSON events (POST /api/v1/agent/chat-stream): ack, step, delta, final and error."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, RootModel

from protocol.base import ErrorBody, WireModel
from protocol.http_chat import ChatResponse
from protocol.workflow import Workflow, WorkflowStep


class AckEvent(WireModel):
    """chat-stream: the turn is understood and its first plugin is about to run."""

    event: Literal["ack"] = "ack"
    reply: str
    workflow: Workflow | None = None
    escalated: bool = Field(
        default=False,
        description="Sent before the turn waits on the LLM planner; budget_ms is the turn's budget from then on.",
    )
    budget_ms: float | None = None


class StepEvent(WireModel):
    """chat-stream: one step finished (done, skipped or failed)."""

    event: Literal["step"] = "step"
    step: WorkflowStep


class DeltaEvent(WireModel):
    """chat-stream: the next words of a reply an LLM backend is writing, each clause sent once it passed the checks
    (no claimed action, short enough to say); the final response's reply is these deltas joined, or, when none came,
    the template's words."""

    event: Literal["delta"] = "delta"
    text: str


class FinalEvent(WireModel):
    """chat-stream: the turn's response, exactly what POST /api/v1/agent/chat would have answered."""

    event: Literal["final"] = "final"
    response: ChatResponse


class ErrorEvent(WireModel):
    """chat-stream: the turn failed after the stream began; the envelope's error."""

    event: Literal["error"] = "error"
    error: ErrorBody


class ChatStreamLine(
    RootModel[Annotated[AckEvent | StepEvent | DeltaEvent | FinalEvent | ErrorEvent, Field(discriminator="event")]]
):
    """One line of the chat-stream NDJSON body (for the document; the stream writes each event model itself)."""
