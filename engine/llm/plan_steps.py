"""The parts of an LLM plan the validator works with: step references, a step being checked, the finished steps and
the cycle check on their references."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.pack import Intent
from protocol.workflow import StepCondition, WorkflowStep

STEP_REF = re.compile(r"^\s*(?:(?:s|step)\s*)?(\d+)\s*$", re.I)  # one \s* per gap: two in a row are quadratic
OPERATOR_ALIASES = {
    "==": "equals",
    "=": "equals",
    "eq": "equals",
    "equal": "equals",
    "is": "equals",
    "!=": "not_equals",
    "ne": "not_equals",
    "neq": "not_equals",
    "not_equal": "not_equals",
    "one_of": "in",
    "any_of": "in",
}
STEP_KEYS = {"step", "intent_id", "intent", "slots", "depends_on", "condition", "requires_confirmation"}
SCALARS = (str, int, float, bool, type(None))


def ref(value: Any) -> int | None:
    """A step reference: 2, "2", "s2" or "step 2"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = STEP_REF.match(value) if isinstance(value, str) else None
    return int(m.group(1)) if m else None


def canon(intent_id: str) -> str:
    return re.sub(r"[\s\-]+", "_", intent_id.strip()).lower()


@dataclass
class Draft:
    pos: int  # 1-based position in the model's list, for messages
    key: int  # the number the model's references use for this step
    intent: Intent
    slots: dict[str, Any]
    depends_on: list[int]  # model keys
    condition: dict[str, Any] | None  # {"step": model key, "field", "operator", "value"}
    confirm: bool


def workflow_steps(kept: list[Draft], index: dict[int, int]) -> list[WorkflowStep]:
    steps = []
    for n, d in enumerate(kept, 1):
        c = d.condition
        steps.append(
            WorkflowStep(
                step=n,
                step_id=f"s{n}",
                intent_id=d.intent.id,
                plugin_id=d.intent.plugin,
                agent=d.intent.agent,
                action=d.intent.action,
                slots=d.slots,
                requires_confirmation=d.confirm,
                depends_on=[f"s{k}" for k in sorted({index[k] for k in d.depends_on})],
                condition=StepCondition(
                    source_step=f"s{index[c['step']]}", field=c["field"], operator=c["operator"], value=c["value"]
                )
                if c
                else None,
            )
        )
    return steps


def cycle(edges: dict[int, list[int]]) -> list[int] | None:
    """A cycle among the references (a step waiting on itself included), as the steps along it. A plan has at
    most max_steps steps, so walking every path is cheap."""

    def walk(path: list[int]) -> list[int] | None:
        for t in edges.get(path[-1], []):
            found = [*path[path.index(t) :], t] if t in path else walk([*path, t])
            if found:
                return found
        return None

    return next((c for n in edges if (c := walk([n]))), None)
