"""The workflow executor (seed 003 §20.3, §21): steps in order, dependencies, slots, conditions, confirmations.

`advance` runs the workflow from where it stands until it completes or pauses (a missing slot, a step waiting
for its confirmation). A step's plugin runs through the turn's `run` (it owns the user's world and the
deadline); an agent-bound step stays `pending` as a decision for its agent; a step with neither plugin nor agent
(emotion support) is done with the intent's own words. `on_step` hears each step as it finishes, so a stream can
send it at once. A client that went away stops the workflow before the next plugin (`run` raises ClientGone):
the steps already run stay run, and the caller commits them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine.pack import Intent, Pack, SlotSpec
from engine.plugins import PluginResult
from protocol.workflow import StepCondition, StepStatus, Workflow, WorkflowStatus, WorkflowStep

FINISHED = frozenset({StepStatus.done, StepStatus.skipped, StepStatus.failed})

RunPlugin = Callable[[Intent, dict[str, Any]], Awaitable[PluginResult]]
InvalidSlot = Callable[[Intent, dict[str, Any]], SlotSpec | None]
OnStep = Callable[[WorkflowStep], Awaitable[None]]


@dataclass(frozen=True)
class Pause:
    kind: Literal["ask_slot", "ask_confirmation"]
    step: WorkflowStep
    slot: SlotSpec | None = None


def condition_holds(condition: StepCondition, results: dict[str, dict[str, Any]]) -> tuple[bool, Any]:
    """Whether `condition` holds on the source step's result data, and the value it read."""
    value = results.get(condition.source_step, {}).get(condition.field)
    if condition.operator == "equals":
        return value == condition.value, value
    if condition.operator == "not_equals":
        return value != condition.value, value
    allowed = condition.value if isinstance(condition.value, list) else [condition.value]
    return value in allowed, value


class WorkflowExecutor:
    def __init__(
        self,
        pack: Pack,
        *,
        invalid_slot: InvalidSlot,
        skip_reason: Callable[[WorkflowStep, str, dict[str, Any]], str],
        own_words: Callable[[Intent, dict[str, Any]], str],
    ) -> None:
        self._pack = pack
        self._own_words = own_words
        self._invalid = invalid_slot
        self._reason = skip_reason

    def paused_step(self, wf: Workflow) -> WorkflowStep | None:
        return next(
            (s for s in wf.steps if s.status in (StepStatus.waiting_slot, StepStatus.waiting_confirmation)), None
        )

    def skip(self, step: WorkflowStep, kind: str, **values: Any) -> None:
        step.status = StepStatus.skipped
        step.skip_reason = self._reason(step, kind, values)

    async def advance(
        self, wf: Workflow, run: RunPlugin, *, confirmed: str | None = None, on_step: OnStep | None = None
    ) -> Pause | None:
        wf.status = WorkflowStatus.running
        by_id = {s.step_id: s for s in wf.steps}
        for step in wf.steps:
            if step.status in FINISHED:
                continue
            intent = self._pack.intent(step.intent_id)
            assert intent is not None, step.intent_id
            blocked = next(
                (
                    by_id[d]
                    for d in step.depends_on
                    if d in by_id and by_id[d].status in (StepStatus.skipped, StepStatus.failed)
                ),
                None,
            )
            if blocked is not None:
                self.skip(step, "dependency", previous=blocked.intent_id)
                await self._heard(step, on_step)
                continue
            invalid = self._invalid(intent, step.slots)
            if invalid is not None:
                step.slots.pop(invalid.name, None)
            missing = [s for s in intent.slots if s.required and s.name not in step.slots]
            if missing:
                step.status, wf.status = StepStatus.waiting_slot, WorkflowStatus.waiting_slot
                return Pause("ask_slot", step, missing[0])
            if step.condition is not None:
                holds, value = condition_holds(step.condition, wf.step_results)
                if not holds:
                    self.skip(step, "condition", value=value)
                    await self._heard(step, on_step)
                    continue
            if step.requires_confirmation and step.step_id != confirmed:
                step.status, wf.status = StepStatus.waiting_confirmation, WorkflowStatus.waiting_confirmation
                return Pause("ask_confirmation", step)
            if intent.agent is not None:
                step.status = StepStatus.pending  # its agent acts on it: a decision, not a plugin run
                continue
            if intent.plugin is None:  # the intent's own words (emotion support): said, nothing run
                step.status = StepStatus.done
                step.result = {"success": True, "message": self._own_words(intent, step.slots), "data": {}}
                await self._heard(step, on_step)
                continue
            result = await run(intent, dict(step.slots))
            step.status = StepStatus.done if result.success else StepStatus.failed
            step.result = {"success": result.success, "message": result.message, "data": result.data}
            wf.step_results[step.step_id] = dict(result.data)
            await self._heard(step, on_step)
        wf.status = WorkflowStatus.completed
        return None

    @staticmethod
    async def _heard(step: WorkflowStep, on_step: OnStep | None) -> None:
        if on_step is not None:
            await on_step(step)
