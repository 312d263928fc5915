"""The main agent's contracts (seed 002): perception's decision, the hand-over to execution, the sub-agents' input and
output, their capability tables, clarification requests and scope resolution."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import Field, model_validator

from protocol.base import WireModel
from protocol.store import ConversationMessageDTO

AgentName = Literal[
    "schedule_todo_agent", "feedback_agent", "replan_agent", "review_agent", "long_task_split_agent", "scheduling_agent"
]
AGENT_NAMES: tuple[AgentName, ...] = (
    "schedule_todo_agent",
    "feedback_agent",
    "replan_agent",
    "review_agent",
    "long_task_split_agent",
    "scheduling_agent",
)


class AgentTimeRange(WireModel):
    """The turn's top-level time range (seed 002 TimeRange): `end_at` exclusive, both with a time zone."""

    start_at: datetime
    end_at: datetime
    source: Literal["user_explicit", "agent_inferred", "system_default"]

    @model_validator(mode="after")
    def _ordered(self) -> AgentTimeRange:
        if self.start_at.tzinfo is None or self.end_at.tzinfo is None:
            raise ValueError("a time range needs time zone offsets")
        if self.end_at < self.start_at:
            raise ValueError("end_at is before start_at")
        return self


class AgentFunctionDefinition(WireModel):
    """One row of a sub-agent's capability table; rendered into the planner's prompt, dispatched by the program."""

    agent_name: AgentName
    function_name: str
    required_fields: list[str]
    optional_fields: list[str] = Field(default_factory=list)
    description: str
    needs_candidates: bool = Field(default=False, description="Execution resolves target items in the store first.")
    writes: bool = Field(default=True, description="Whether the function may return a db_action.")


class ClarificationQuestion(WireModel):
    question_id: str
    field_name: str
    question_text: str
    options: list[dict[str, str]] = Field(default_factory=list)


class ClarificationRequest(WireModel):
    reason: Literal["missing_required_params", "invalid_answer", "long_task_split_questions", "ambiguous_reference"]
    mode: Literal["single", "batch"]
    questions: list[ClarificationQuestion]
    original_agent_name: AgentName | None
    original_function_name: str | None


class PerceptionDecision(WireModel):
    target_agent_name: AgentName
    target_function_name: str
    parsed_params: dict[str, Any]
    time_range: AgentTimeRange
    missing_fields: list[str] = Field(default_factory=list)
    raw_input: str
    source_message_id: UUID
    recent_messages: list[ConversationMessageDTO]
    trace_id: str | None = None


class ExecutionLayerInput(WireModel):
    """The only object perception hands to execution."""

    target_agent_name: AgentName
    target_function_name: str
    parsed_params: dict[str, Any]
    time_range: AgentTimeRange
    raw_input: str
    source_message_id: UUID
    recent_messages: list[ConversationMessageDTO]
    trace_id: str | None = None


class CandidateItem(WireModel):
    """A task item as execution offers it to a sub-agent or to the user (a `selection.required` candidate)."""

    id: UUID
    title: str
    item_type: Literal["schedule", "todo", "subtask"]
    start_at: datetime | None = None
    end_at: datetime | None = None
    due_at: datetime | None = None
    status: str = "planned"
    version: int = 1
    long_goal_id: UUID | None = None


class FeedbackFact(WireModel):
    id: UUID
    task_item_id: UUID
    feedback_status: Literal["completed", "not_completed", "partially_completed", "deferred", "cancelled"]
    normalized_feedback: str
    duration_minutes: int | None = None
    occurred_at: datetime
    # the item it is on, as stored now: its title, and whether it has left the range the facts were read for (moved
    # or deleted since): a review names such feedback apart from the period's items
    item_title: str | None = None
    item_left_range: bool = False


class CalendarFact(WireModel):
    """An entry of one of the user's calendars (an import, a feed, a CalDAV calendar): read-only, never a candidate
    for a write."""

    title: str
    kind: Literal["event", "deadline"]
    start_at: datetime | None = None
    end_at: datetime | None = None
    due_at: datetime | None = None
    all_day: bool = False
    busy: bool = True  # an event that takes the time (not transparent, not cancelled)
    source_name: str


class BusySpan(WireModel):
    """A time the user is busy (one of their items or a busy event of their calendars): [start_at, end_at)."""

    start_at: datetime
    end_at: datetime


class SubAgentInputBase(WireModel):
    user_id: UUID
    raw_input: str
    time_range: AgentTimeRange
    recent_messages: list[ConversationMessageDTO]
    parsed_params: dict[str, Any]
    candidate_items: list[CandidateItem] = Field(default_factory=list)
    # facts execution reads for the agents that need them (seed 002's conditional inputs)
    feedbacks: list[FeedbackFact] = Field(default_factory=list, description="feedback in the range (review, replan)")
    user_profile: dict[str, Any] = Field(default_factory=dict)
    calendar_entries: list[CalendarFact] = Field(
        default_factory=list, description="the user's calendar entries in the range (query)"
    )
    busy_times: list[BusySpan] = Field(
        default_factory=list, description="when the user is busy around the request's window (scheduling)"
    )
    now: datetime


class AgentResponseEnvelope(WireModel):
    agent_name: AgentName
    function_name: str
    isNeedUser: bool
    isDisplayResult: bool
    isError: bool
    result: dict[str, Any] | str | list[Any]
    db_action: dict[str, Any] | None = Field(
        default=None, description="A write request body (protocol.rest.WriteRequestCreate without idempotency_key)."
    )
    error_message: str | None = None


class GoalSplitCandidate(WireModel):
    plan_overview: str
    task_profile_summary: str
    subtasks: list[dict[str, Any]] = Field(default_factory=list)


class ScopeResolutionResult(WireModel):
    decision: Literal["single", "range", "ambiguous", "not_found"]
    resolved_item_ids: list[UUID] = Field(default_factory=list)
    resolved_item_id: UUID | None = None
    question_text: str | None = None
