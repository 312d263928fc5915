"""Seed 000's Scheduling chain on the wire: the task level, the draft (a plan with candidate slots, or a first action
with its start instructions) and the questions about what the request leaves out."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, ValidationError

from protocol.base import WireModel

TaskLevel = Literal["L1", "L2", "L3"]
MissingInfo = Literal["goal", "period", "duration"]


class PlanSlot(WireModel):
    """One candidate time slot: inside the user's free time and working hours, overlapping none of their items."""

    title: str
    start_at: datetime
    end_at: datetime


class SchedulingDraft(WireModel):
    """What the Scheduling chain proposes for one planning request; accepting it (确认) writes `slots` as items."""

    task_level: TaskLevel = Field(description="L1 idea, L2 plan (DraftPlan), L3 action (DraftAction).")
    kind: Literal["plan", "action"]
    title: str
    draft_text: str = Field(description="The draft plan (with its candidate slots) or the action, in Chinese.")
    slots: list[PlanSlot] = Field(default_factory=list)
    start_instructions: str | None = Field(default=None, description="L3: how to start the first step.")
    constraints_and_missing_info: list[str] = Field(
        default_factory=list, description="Assumptions the draft made, what it lacks, its risks."
    )
    missing: list[MissingInfo] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list, description="What to ask about the missing information.")
    next_steps_suggestion: str = ""
    time_zone: str
    working_hours: dict[str, str] = Field(description='{"start": "HH:MM", "end": "HH:MM"} in `time_zone`.')
    texts_by: str = Field(
        default="template",
        description="Who wrote the texts: `template` (over the computed facts), or the `llm.use.programs` backend "
        "whose seed 000 programs wrote at least one of them (the facts are the chain's either way).",
    )

    @classmethod
    def of(cls, result: Any) -> SchedulingDraft | None:
        """The draft an agent's result carries (its `scheduling` key); None when it carries none."""
        body = result.get("scheduling") if isinstance(result, dict) else None
        if not isinstance(body, dict):
            return None
        try:
            return cls.model_validate(body)
        except ValidationError:
            return None
