"""Grounding: an LLM plan runs only what the user's words say.

A schema-valid plan from a catalog-valid model can still name an action nobody asked for, or a value nobody said
(a small model copies its examples). Before a validated plan may run, every step's intent must have evidence in
some clause of the turn — the clause analysis' fused score (keywords, the served classifier and detector on that
clause, training-example overlap, slot values) at least `min_evidence` — and every slot value the model wrote must
be one the words hold: the same temperature or order number read from the text, a text value said in it. What the
model left out the validator already filled from the words. Returns the reasons a plan must not run (none: it
may).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.pack import Pack, SlotSpec
from engine.workflow.analysis import ClauseScore
from protocol.workflow import Workflow

# slot types whose value is read back out of the words and compared; other types are checked as said text
_READ_BACK = ("temperature", "order_id", "destination")
Extract = Callable[..., dict[str, Any]]  # (text, slot specs) -> values found in it


def ungrounded(
    workflow: Workflow, *, text: str, clauses: list[ClauseScore], pack: Pack, extract: Extract, min_evidence: float
) -> list[str]:
    """Why `workflow` (a validated LLM plan for `text`) says more than the words do; [] when it does not."""
    reasons: list[str] = []
    for step in workflow.steps:
        best = max((c.scores.get(step.intent_id, 0.0) for c in clauses), default=0.0)
        if best < min_evidence:
            reasons.append(
                f"step {step.step}: nothing said asks for {step.intent_id} "
                f"(best clause evidence {best:.2f} < {min_evidence:g})"
            )
        intent = pack.intent(step.intent_id)
        specs = {s.name: s for s in intent.slots} if intent else {}
        for name, value in step.slots.items():
            spec = specs.get(name)
            if spec is not None and not _said(spec, value, text, extract):
                reasons.append(f"step {step.step}: slot {name} {value!r} is not what the words say")
    return reasons


def _said(spec: SlotSpec, value: Any, text: str, extract: Extract) -> bool:
    if spec.type in _READ_BACK:
        found = extract(text, [spec]).get(spec.name)
        return found is not None and str(found) == str(value)
    if spec.type == "text":
        return isinstance(value, str) and value.strip() != "" and value.strip() in text
    return True  # dates and times: the validator resolved the model's words against the clock; nothing to compare
