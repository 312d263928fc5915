"""REST protocol of seed 002: auth, conversation history, items, long goals, profile and write-request bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, StrictStr, field_validator, model_validator

from protocol.base import WireModel
from protocol.store import ConversationMessageDTO, LongGoalDTO, TaskItemDTO, TaskProfileSnapshot
from protocol.strings import WHITESPACE, JsonObject, NonBlankStr, PlainStr

# what `_email` below accepts, for the document: surrounding whitespace, then local@domain with a dot in the domain
# and no whitespace (nor NUL)
EMAIL_SHAPE = rf"^[{WHITESPACE}]*[^@\x00{WHITESPACE}]+@[^\x00{WHITESPACE}]*\.[^\x00{WHITESPACE}]*[{WHITESPACE}]*$"


class RegisterRequest(WireModel):
    email: PlainStr = Field(min_length=3, max_length=254, json_schema_extra={"pattern": EMAIL_SHAPE})
    password: StrictStr = Field(min_length=8, max_length=256)
    display_name: PlainStr | None = Field(default=None, max_length=64)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        value = value.strip().lower()
        local, _, domain = value.partition("@")
        if not local or "." not in domain or any(c.isspace() for c in value):
            raise ValueError("not an email address")
        return value


class LoginRequest(WireModel):
    email: PlainStr = Field(min_length=1, max_length=254)
    password: StrictStr = Field(min_length=1, max_length=256)


class AuthResponse(WireModel):
    user_id: UUID
    business_user_id: str
    access_token: str
    token_type: Literal["bearer"] = "bearer"
    expires_in: int


class MeResponse(WireModel):
    user_id: UUID
    business_user_id: str
    display_name: str | None


class MessagesPage(WireModel):
    messages: list[ConversationMessageDTO]
    has_more: bool


class PendingClarification(WireModel):
    question_id: UUID
    question_text: str
    missing_fields: list[str]
    expires_at: datetime
    session_id: str | None

    @classmethod
    def of(cls, question: ConversationMessageDTO | None) -> PendingClarification | None:
        """The open clarification question a snapshot reports (HTTP and WebSocket alike); None without one."""
        if question is None:
            return None
        meta = question.metadata
        return cls(
            question_id=question.id,
            question_text=question.raw_content,
            missing_fields=meta.missing_fields,
            expires_at=meta.expires_at,
            session_id=meta.session_id,
        )


class ConversationSnapshot(WireModel):
    recent_messages: list[ConversationMessageDTO]
    pending_clarification: PendingClarification | None
    last_event: ConversationMessageDTO | None


class TimelineResponse(WireModel):
    items: list[TaskItemDTO]


class GoalsResponse(WireModel):
    goals: list[LongGoalDTO]


class GoalDetailResponse(WireModel):
    goal: LongGoalDTO
    subtasks: list[TaskItemDTO]
    task_profile: TaskProfileSnapshot | None


WriteAction = Literal["create", "update", "delete", "feedback", "replan", "goal_split"]
WriteTarget = Literal["task_item", "long_goal", "feedback", "profile"]


class WriteRequestCreate(WireModel):
    """The served document lists the (action, target_type) pairs the write gate takes, each with its payload and
    target_id rule (serve_app/openapi_docs.py)."""

    action: WriteAction
    target_type: WriteTarget
    target_id: UUID | None = None
    payload: JsonObject
    preview_text: NonBlankStr = Field(min_length=1, max_length=2000)
    base_version: int | None = Field(default=None, gt=0, le=2**31 - 1)  # an integer column
    idempotency_key: NonBlankStr | None = Field(default=None, min_length=1, max_length=128)

    @model_validator(mode="after")
    def _target(self) -> WriteRequestCreate:
        if self.action == "create" and self.target_id is not None:
            raise ValueError("a create has no target_id")
        if self.action in ("update", "delete") and self.target_id is None:
            raise ValueError(f"an {self.action} needs target_id")
        return self


class WriteRequestCreated(WireModel):
    write_request_id: UUID
    payload_hash: str
    confirmation_payload: dict[str, Any]


class WriteDecisionRequest(WireModel):
    decision: Literal["confirmed", "rejected"]
    idempotency_key: NonBlankStr = Field(min_length=1, max_length=128)
    payload_hash: StrictStr | None = Field(
        default=None,
        pattern="^[0-9a-f]{64}$",
        description="The request's `payload_hash` (sha256, hex), to confirm what was shown.",
    )


class TaskItemPayload(WireModel):
    """The fields of a task item a write request may create or update (seed 002 TaskItemDTO, writable part).
    Times carry an offset, and `end_at` is not before `start_at`."""

    # documented here, checked by the validator below
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {
                    "properties": {"item_type": {"const": "subtask"}, "long_goal_id": {"type": "string"}},
                    "required": ["long_goal_id"],
                },
                {"properties": {"item_type": {"enum": ["schedule", "todo"]}, "long_goal_id": {"type": "null"}}},
            ]
        }
    )

    item_type: Literal["schedule", "todo", "subtask"]
    title: NonBlankStr = Field(min_length=1, max_length=200)
    description: PlainStr | None = Field(default=None, max_length=4000)
    start_at: datetime | None = None
    end_at: datetime | None = None
    due_at: datetime | None = None
    long_goal_id: UUID | None = None
    status: Literal["planned", "in_progress", "completed", "cancelled", "deferred"] = "planned"

    @model_validator(mode="after")
    def _consistent(self) -> TaskItemPayload:
        if (self.item_type == "subtask") != (self.long_goal_id is not None):
            raise ValueError("only a subtask, and every subtask, is bound to a long_goal_id")
        if self.start_at and self.end_at and self.end_at < self.start_at:
            raise ValueError("end_at is before start_at")
        for name in ("start_at", "end_at", "due_at"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise ValueError(f"{name} needs a time zone offset")
        return self


class LongGoalPayload(WireModel):
    title: NonBlankStr = Field(min_length=1, max_length=200)
    description: PlainStr | None = Field(default=None, max_length=4000)
    plan_overview: PlainStr | None = Field(default=None, max_length=8000)
    start_at: datetime | None = None
    deadline_at: datetime | None = None
    status: Literal["active", "completed", "cancelled"] = "active"


class ProfilePayload(WireModel):
    profile_data: JsonObject


class PasswordChangeRequest(WireModel):
    current_password: StrictStr = Field(min_length=1, max_length=256)
    new_password: StrictStr = Field(min_length=8, max_length=256)
