"""Store DTOs of seed 002: conversation messages and their metadata, task items, long goals, profiles, write results."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import Field, model_validator

from protocol.base import WireModel
from protocol.media import InputModality

MessageRole = Literal["user", "assistant", "system", "tool"]
MessageKind = Literal[
    "input",
    "clarification_question",
    "clarification_answer",
    "decision",
    "execution_processing",
    "selection_required",
    "selection_submit",
    "selection_cancel",
    "execution_result",
    "confirmation_request",
    "confirmation_decision",
    "system_notice",
    "error",
]
RESULT_KINDS = frozenset({"decision", "execution_result", "confirmation_request", "confirmation_decision"})


class StoredTimeRange(WireModel):
    start_at: datetime
    end_at: datetime
    source: Literal["user_explicit", "agent_inferred", "system_default"]


class ConversationMessageMetadata(WireModel):
    """The flat metadata object of one conversation message, with seed 002's consistency rules.

    `session_id` is Baton's addition: the turn-state session the message belongs to.
    """

    schema_version: Literal[1] = 1
    message_kind: MessageKind
    session_id: str | None = None
    client_message_id: str | None = None
    trace_id: str | None = None
    question_id: UUID | None = None
    question_status: Literal["open", "answered", "expired"] | None = None
    question_type: Literal["normal", "long_task_split", "disambiguation", "confirmation"] | None = None
    expires_at: datetime | None = None
    reply_to_question_id: UUID | None = None
    target_agent_name: str | None = None
    target_function_name: str | None = None
    missing_fields: list[str] = Field(default_factory=list)
    parsed_params: dict[str, Any] = Field(default_factory=dict)
    time_range: StoredTimeRange | None = None
    write_request_id: UUID | None = None
    decision: Literal["confirmed", "rejected"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ConversationMessageMetadata:
        kind = self.message_kind
        if kind in ("input", "clarification_answer") and not self.client_message_id:
            raise ValueError(f"a user '{kind}' message needs client_message_id")
        if kind == "clarification_question":
            if self.question_status is None or self.expires_at is None:
                raise ValueError("a clarification_question needs question_status and expires_at")
        elif self.question_id is not None or self.question_status is not None:
            raise ValueError("only a clarification_question carries question_id / question_status")
        if kind == "clarification_answer" and self.reply_to_question_id is None:
            raise ValueError("a clarification_answer needs reply_to_question_id")
        if kind != "clarification_answer" and self.reply_to_question_id is not None:
            raise ValueError("only a clarification_answer carries reply_to_question_id")
        if self.decision is not None and kind != "confirmation_decision":
            raise ValueError("only a confirmation_decision carries a decision")
        return self


class ConversationMessageDTO(WireModel):
    id: UUID
    user_id: UUID
    message_index: int
    role: MessageRole
    modality: InputModality | None
    raw_content: str
    source_url: str | None
    metadata: ConversationMessageMetadata
    created_at: datetime


class TaskItemDTO(WireModel):
    id: UUID
    user_id: UUID
    long_goal_id: UUID | None = None
    item_type: Literal["schedule", "todo", "subtask"]
    title: str
    description: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    due_at: datetime | None = None
    status: Literal["planned", "in_progress", "completed", "cancelled", "deferred"]
    version: int


class LongGoalDTO(WireModel):
    id: UUID
    user_id: UUID
    title: str
    description: str | None = None
    plan_overview: str | None = None
    start_at: datetime | None = None
    deadline_at: datetime | None = None
    status: Literal["active", "completed", "cancelled"]
    version: int


class TaskProfileSnapshot(WireModel):
    id: UUID
    user_id: UUID
    long_goal_id: UUID
    profile_summary: str
    source_message_id: UUID
    version: int


class UserProfileDTO(WireModel):
    user_id: UUID
    profile_data: dict[str, Any] = Field(default_factory=dict)
    version: int
    updated_at: datetime | None = None


class WriteDecisionResult(WireModel):
    write_request_id: UUID
    status: Literal["confirmed", "rejected", "applied", "expired"]
    applied_target_id: UUID | None = None
    message: str | None = None
