"""The WebSocket conversation protocol of seed 002: one envelope `{type, timestamp, payload}` for every frame, and
one payload model per type, with the seed's field names."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import Field, StrictStr, field_validator, model_validator

from protocol.agents import AgentName, ClarificationQuestion
from protocol.base import WireModel
from protocol.media import InputModality
from protocol.rest import PendingClarification
from protocol.scheduling import SchedulingDraft
from protocol.store import ConversationMessageDTO
from protocol.turn_debug import RoutingDebug, Timings
from protocol.workflow import NotDone, Workflow

ClientId = StrictStr


def utc_now() -> datetime:
    return datetime.now(UTC)


class WsEnvelope(WireModel):
    type: str = Field(min_length=1, max_length=64)
    timestamp: datetime = Field(default_factory=utc_now, description="When the sender produced the frame.")
    payload: dict[str, Any] = Field(default_factory=dict)


# ---- client -> server ---------------------------------------------------------------------------------------------


def _id(max_length: int = 128) -> Any:
    return Field(min_length=1, max_length=max_length, pattern=r"\S")


class DialogueInputPayload(WireModel):
    client_message_id: ClientId = _id()
    modality: InputModality = "text"
    raw_content: StrictStr | None = Field(default=None, max_length=2000)
    source_url: StrictStr | None = Field(default=None, max_length=2048)
    reply_to_question_id: StrictStr | None = Field(default=None, max_length=128)
    source_message_id: UUID | None = None
    trace_id: StrictStr | None = Field(default=None, max_length=128)

    @model_validator(mode="after")
    def _content(self) -> DialogueInputPayload:
        if self.modality == "text":
            if self.raw_content is None or not self.raw_content.strip():
                raise ValueError("a text input needs a non-blank raw_content")
            if self.source_url is not None:
                raise ValueError("a text input carries no source_url")
        elif not self.source_url:
            raise ValueError(f"a {self.modality} input needs source_url (upload the media first)")
        return self


class DialogueAnswerPayload(WireModel):
    """An answer to `dialogue.clarification`: `raw_content` (one question), or `answers` by field_name (a batch)."""

    client_message_id: ClientId = _id()
    reply_to_question_id: StrictStr = _id()
    modality: InputModality = "text"
    raw_content: StrictStr | None = Field(default=None, max_length=2000)
    source_url: StrictStr | None = Field(default=None, max_length=2048)
    answers: dict[str, StrictStr] = Field(default_factory=dict, max_length=20)
    trace_id: StrictStr | None = Field(default=None, max_length=128)

    @model_validator(mode="after")
    def _content(self) -> DialogueAnswerPayload:
        if self.modality != "text":
            if not self.source_url:
                raise ValueError(f"a {self.modality} answer needs source_url")
        elif not (self.raw_content and self.raw_content.strip()) and not any(v.strip() for v in self.answers.values()):
            raise ValueError("an answer needs raw_content or answers")
        return self


class SelectionSubmitPayload(WireModel):
    interaction_id: UUID
    selected_candidate_ids: list[UUID] = Field(min_length=1, max_length=50)
    trace_id: StrictStr | None = Field(default=None, max_length=128)


class SelectionCancelPayload(WireModel):
    interaction_id: UUID
    trace_id: StrictStr | None = Field(default=None, max_length=128)


class WriteDecidePayload(WireModel):
    write_request_id: UUID
    decision: Literal["confirmed", "rejected"]
    idempotency_key: ClientId = _id()
    payload_hash: StrictStr | None = Field(default=None, min_length=64, max_length=64)


class PingPayload(WireModel):
    nonce: StrictStr | None = Field(default=None, max_length=128)


class ResumePayload(WireModel):
    last_seen_message_id: UUID | None = None


CLIENT_PAYLOADS: dict[str, type[WireModel]] = {
    "dialogue.input": DialogueInputPayload,
    "dialogue.answer": DialogueAnswerPayload,
    "selection.submit": SelectionSubmitPayload,
    "selection.cancel": SelectionCancelPayload,
    "write.decide": WriteDecidePayload,
    "transport.ping": PingPayload,
    "transport.resume": ResumePayload,
}


# ---- server -> client ---------------------------------------------------------------------------------------------


class TurnSummary(WireModel):
    """How the turn was decided, on the event that ends it."""

    status: str
    reply: str
    timings: Timings = Field(default_factory=Timings)
    routing_debug: RoutingDebug | None = None
    workflow: Workflow | None = None
    not_done: list[NotDone] = Field(
        default_factory=list, description="What the message asked that is outside the catalog (as `ChatResponse`)."
    )


class ClarificationPayload(WireModel):
    question_id: UUID
    question_type: Literal["normal", "long_task_split", "disambiguation", "confirmation"]
    reason: Literal["missing_required_params", "invalid_answer", "long_task_split_questions", "ambiguous_reference"]
    mode: Literal["single", "batch"]
    questions: list[ClarificationQuestion]
    expires_at: datetime
    original_agent_name: AgentName | None = None
    original_function_name: str | None = None
    turn: TurnSummary


class DecisionPayload(WireModel):
    source_message_id: UUID
    target_agent_name: AgentName
    target_function_name: str
    parsed_params: dict[str, Any]
    time_range: dict[str, Any]
    reply: str


class ProcessingPayload(WireModel):
    """Work in progress on `source_message_id`. `planning`: the turn escalated to the LLM planner and waits on it
    (its budget grew: `budget_ms`); no agent is chosen yet, so the target fields are null. Not logged, not replayed."""

    source_message_id: UUID
    target_agent_name: AgentName | None
    target_function_name: str | None
    stage: Literal["resolving_scope", "calling_agent", "planning"]
    budget_ms: float | None = None


class DeltaPayload(WireModel):
    """The next clause of the reply to `source_message_id` an LLM backend is writing, sent once it passed the checks
    (docs/llm-backends.md); the reply the turn's outcome event carries starts with the deltas joined. Not logged, not
    replayed: a client that reconnects gets the whole reply."""

    source_message_id: UUID
    text: str = Field(min_length=1, max_length=2000)


class SelectionCandidate(WireModel):
    id: UUID
    title: str
    start_at: datetime | None
    end_at: datetime | None
    item_type: Literal["schedule", "todo", "subtask"]


class SelectionRequiredPayload(WireModel):
    interaction_id: UUID
    question_text: str
    candidates: list[SelectionCandidate]
    turn: TurnSummary


class ConfirmationRequiredPayload(WireModel):
    write_request_id: UUID
    payload_hash: str
    preview_text: str
    confirmation_payload: dict[str, Any]
    expires_at: datetime
    turn: TurnSummary
    scheduling: SchedulingDraft | None = Field(
        default=None, description="A planning request's draft (task level, slots, questions) the write would save."
    )


class WriteAppliedPayload(WireModel):
    write_request_id: UUID
    status: Literal["applied"]
    applied_target_id: UUID | None
    message: str | None
    turn: TurnSummary


class ExecutionResultPayload(WireModel):
    reply: str
    result: dict[str, Any] | list[Any] | str | None = None
    source_message_id: UUID | None = None
    write_request_id: UUID | None = None
    turn: TurnSummary


class ErrorPayload(WireModel):
    code: str
    message: str
    field: str | None = None
    retry_after_s: int | None = None
    client_message_id: str | None = None


class PongPayload(WireModel):
    nonce: str | None = None
    server_time: datetime


class SnapshotPayload(WireModel):
    """What a reconnecting client needs: the messages after the one it saw last, the open question, the last event."""

    messages: list[ConversationMessageDTO]
    pending_clarification: PendingClarification | None
    last_event: WsEnvelope | None
    found_last_seen: bool

    @field_validator("messages")
    @classmethod
    def _ordered(cls, value: list[ConversationMessageDTO]) -> list[ConversationMessageDTO]:
        return sorted(value, key=lambda m: m.message_index)


SERVER_PAYLOADS: dict[str, type[WireModel]] = {
    "dialogue.clarification": ClarificationPayload,
    "dialogue.decision": DecisionPayload,
    "execution.processing": ProcessingPayload,
    "execution.delta": DeltaPayload,
    "selection.required": SelectionRequiredPayload,
    "write.confirmation_required": ConfirmationRequiredPayload,
    "write.applied": WriteAppliedPayload,
    "execution.result": ExecutionResultPayload,
    "dialogue.error": ErrorPayload,
    "execution.error": ErrorPayload,
    "transport.pong": PongPayload,
    "transport.snapshot": SnapshotPayload,
}


def envelope(type_: str, payload: WireModel) -> WsEnvelope:
    return WsEnvelope(type=type_, timestamp=utc_now(), payload=payload.model_dump(mode="json"))
