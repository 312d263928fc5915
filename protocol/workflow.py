"""A planned workflow on the wire (seed 003 §20–§21): its steps, their conditions and statuses."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from protocol.base import WireModel


class WorkflowType(StrEnum):
    single = "single"
    sequence = "sequence"
    conditional = "conditional"


class WorkflowStatus(StrEnum):
    running = "running"
    waiting_slot = "waiting_slot"
    waiting_confirmation = "waiting_confirmation"
    completed = "completed"
    stopped = "stopped"


class StepStatus(StrEnum):
    pending = "pending"
    waiting_slot = "waiting_slot"
    waiting_confirmation = "waiting_confirmation"
    done = "done"
    skipped = "skipped"
    failed = "failed"


class StepCondition(WireModel):
    """Run the step only if `field` of `source_step`'s result data compares true against `value` (seed 003 §21.1)."""

    source_step: str
    field: str
    operator: Literal["equals", "not_equals", "in"]
    value: Any


class WorkflowStep(WireModel):
    step: int = Field(description="1-based position in the workflow.")
    step_id: str
    intent_id: str
    plugin_id: str | None = None
    agent: str | None = None
    action: str | None = None
    status: StepStatus = StepStatus.pending
    skip_reason: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    slots: dict[str, Any] = Field(default_factory=dict)
    condition: StepCondition | None = None
    requires_confirmation: bool = False
    clause: str = Field(default="", description="The words of the utterance this step came from.")
    result: dict[str, Any] | None = Field(
        default=None, description="The plugin's {success, message, data} once it ran."
    )


class Workflow(WireModel):
    type: WorkflowType
    status: WorkflowStatus = WorkflowStatus.running
    steps: list[WorkflowStep]
    step_results: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="step_id -> the plugin result's data."
    )
    summary: str = ""
    planner: str = Field(default="", description="The planner that produced it (template:<id>, heuristic).")


class NotDone(WireModel):
    """A part of the request the assistant cannot do: the clause as the user said it, and why."""

    text: str = Field(description="The clause, in the user's words (帮我把后备箱打开).")
    reason: Literal["outside_catalog"] = Field(
        description="outside_catalog: it asks for an action no intent of the pack (and no agent) carries."
    )
