"""What a workflow turn says: the report of the steps that finished, why a step was skipped, and seed 000's pipeline
description."""

from __future__ import annotations

from typing import Any

from engine.pack import Pack
from engine.responses import ResponsePolicy, render
from protocol.workflow import StepStatus, Workflow, WorkflowStep


class WorkflowWording:
    def __init__(self, pack: Pack, say: ResponsePolicy) -> None:
        self._pack = pack
        self._say = say

    def report(self, steps: list[WorkflowStep], *, summary: bool = False) -> str:
        own = [s.result["message"] for s in steps if s.status == StepStatus.done and s.result and self._own_words(s)]
        done = [
            s.result["message"] for s in steps if s.status == StepStatus.done and s.result and not self._own_words(s)
        ]
        notes = [s.skip_reason for s in steps if s.status == StepStatus.skipped and s.skip_reason]
        notes += [
            self._say.simple("step_failed", label=self.label(s), message=(s.result or {}).get("message", ""))
            for s in steps
            if s.status == StepStatus.failed
        ]
        text = "".join(own) + self._say.workflow_summary(done, notes)
        return text if summary or not text else text + " "

    def pipeline(self, wf: Workflow) -> tuple[list[str], str | None]:
        """Seed 000's Router fields for this workflow: the modules in order and a one-sentence description."""
        modules = self._pack.workflows.modules
        order: list[str] = []
        for step in wf.steps:
            name = modules.get(step.intent_id)
            if name and name not in order:
                order.append(name)
        if not order:
            return [], None
        return order, self._say.pipeline_description([self.label(s) for s in wf.steps])

    def single(self, intent_id: str, slots: dict[str, Any]) -> tuple[list[str], str | None]:
        """Seed 000's Router fields for a single-intent turn: its intent's module and label (none outside a module)."""
        module, intent = self._pack.workflows.modules.get(intent_id), self._pack.intent(intent_id)
        if not module or intent is None:
            return [], None
        return [module], self._say.pipeline_description([render(intent.label, **slots)])

    def _own_words(self, step: WorkflowStep) -> bool:
        intent = self._pack.intent(step.intent_id)
        return intent is not None and intent.plugin is None and intent.agent is None

    def skip_reason(self, step: WorkflowStep, kind: str, values: dict[str, Any]) -> str:
        label = self.label(step)
        if kind == "condition":
            value = values.get("value")
            said = self._pack.workflows.value_labels.get(str(value), f"条件不满足（{value}）")
            return self._say.simple("step_skipped_condition", value=said, label=label)
        if kind == "dependency":
            previous = self._pack.intent(values.get("previous", ""))
            return self._say.simple("step_skipped_dependency", previous=previous.label if previous else "", label=label)
        return self._say.simple("step_declined", label=label)

    def label(self, step: WorkflowStep) -> str:
        intent = self._pack.intent(step.intent_id)
        return render(intent.label, **step.slots) if intent else step.intent_id
