"""Payloads of the writes the sub-agents propose (seed 002): a feedback record, a replan, a long-goal split.

Each is the `payload` of a write request; the gate validates it at creation and again when it applies it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import Field, StrictStr, model_validator

from protocol.base import WireModel
from protocol.rest import LongGoalPayload

FeedbackStatus = Literal["completed", "not_completed", "partially_completed", "deferred", "cancelled"]


def _aware(*values: datetime | None) -> None:
    if any(v is not None and v.tzinfo is None for v in values):
        raise ValueError("times need a time zone offset")


class FeedbackPayload(WireModel):
    """action `feedback`, target_type `feedback`: one feedback_records row on one of the user's task items.

    `item_version` is the item's version the feedback was given against; a feedback that finishes, defers or
    cancels the item also moves the item's status in the same transaction."""

    task_item_id: UUID
    item_version: int = Field(gt=0)
    feedback_status: FeedbackStatus
    normalized_feedback: StrictStr = Field(min_length=1, max_length=2000)
    duration_minutes: int | None = Field(default=None, ge=0, le=24 * 60)
    occurred_at: datetime

    @model_validator(mode="after")
    def _check(self) -> FeedbackPayload:
        _aware(self.occurred_at)
        if not self.normalized_feedback.strip():
            raise ValueError("normalized_feedback must not be blank")
        return self


class ItemChange(WireModel):
    task_item_id: UUID
    base_version: int = Field(gt=0)
    start_at: datetime | None = None
    end_at: datetime | None = None
    due_at: datetime | None = None
    status: Literal["planned", "in_progress", "completed", "cancelled", "deferred"] | None = None

    @model_validator(mode="after")
    def _check(self) -> ItemChange:
        _aware(self.start_at, self.end_at, self.due_at)
        if self.start_at and self.end_at and self.end_at < self.start_at:
            raise ValueError("end_at is before start_at")
        if not self.model_fields_set - {"task_item_id", "base_version"}:
            raise ValueError("a change sets at least one of start_at, end_at, due_at, status")
        return self


class ReplanPayload(WireModel):
    """action `replan`, target_type `task_item`: every change applies, version-checked, in one transaction, or none."""

    changes: list[ItemChange] = Field(min_length=1, max_length=100)
    summary: StrictStr = Field(min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _distinct(self) -> ReplanPayload:
        ids = [c.task_item_id for c in self.changes]
        if len(set(ids)) != len(ids):
            raise ValueError("each item changes at most once in a replan")
        return self


class SubtaskPayload(WireModel):
    title: StrictStr = Field(min_length=1, max_length=200)
    description: StrictStr | None = Field(default=None, max_length=4000)
    start_at: datetime | None = None
    end_at: datetime | None = None
    due_at: datetime | None = None

    @model_validator(mode="after")
    def _check(self) -> SubtaskPayload:
        _aware(self.start_at, self.end_at, self.due_at)
        if not self.title.strip():
            raise ValueError("title must not be blank")
        if self.start_at and self.end_at and self.end_at < self.start_at:
            raise ValueError("end_at is before start_at")
        return self


class GoalSplitPayload(WireModel):
    """action `goal_split`, target_type `long_goal`: the goal (its plan_overview set), its near-term subtasks and
    the task_profile_snapshots row, in one transaction; the snapshot's source message is the request's."""

    goal: LongGoalPayload
    subtasks: list[SubtaskPayload] = Field(default_factory=list, max_length=50)
    task_profile_summary: StrictStr = Field(min_length=1, max_length=4000)
