"""What one LLM planning call came to, and the names an LLM plan goes by."""

from __future__ import annotations

from dataclasses import dataclass

from engine.llm.lm import LmReply
from engine.llm.plan_validation import RejectedPlan, ValidatedPlan
from engine.workflow.planners import Plan

NAME = "llm"  # Workflow.planner of the in-cluster LLM's plan; a cloud backend's is "llm:<backend>"
LOCAL = "local"  # the in-cluster Planner's backend name (config.llm.LOCAL)


@dataclass(frozen=True)
class LlmPlanOutcome:
    """What one LLM planning call came to. Exactly one of: `plan` (validated, fit to run); `rejected` (the
    model answered, the plan failed validation and must not run); `timed_out` (aborted at the deadline, the
    turn degraded); `error` (the call failed otherwise, the turn degraded). `reply` is the model's answer when
    there was one; `request_id`/`trace_id` name the call in the server's and the hooks' logs."""

    plan: ValidatedPlan | None = None
    rejected: RejectedPlan | None = None
    timed_out: bool = False
    reply: LmReply | None = None
    error: str | None = None
    request_id: str | None = None
    trace_id: str | None = None
    planner: str = NAME
    busy: bool = False

    @property
    def accepted(self) -> bool:
        return self.plan is not None

    @property
    def reason(self) -> str:
        """One line for PlannerDebug.reason."""
        if self.plan is not None:
            return f"{self.planner}: {len(self.plan.workflow.steps)} steps"
        if self.rejected is not None:
            return f"{self.planner}: plan rejected: " + "; ".join(self.rejected.reasons)
        if self.timed_out:
            return f"{self.planner}: timed out"
        return f"{self.planner}: {self.error or 'no plan'}"

    def to_plan(self) -> Plan:
        """As the local planners' `Plan`, so the chain can treat the LLM like its other planners."""
        workflow = self.plan.workflow if self.plan is not None else None
        return Plan(workflow is not None, self.planner if workflow is not None else "", self.reason, workflow)
