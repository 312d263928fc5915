"""Validation of an LLM plan before anything runs (seed 003 §18.2–§18.3).

`validate_plan` reads what the model answered (JSON text, possibly in prose or a ``` fence, or the parsed
object), normalises it the way §18.3 asks and checks it against the pack's catalog. It returns either a
`ValidatedPlan`, whose `Workflow` is built like the local planners' (engine/workflow/planners.py StepBuilder:
step ids s1..sn, plugin/agent/action from the catalog), or a `RejectedPlan` with every reason found. Bad
model output is data: nothing in here raises on it, and a rejected plan is never executed. Reasons and
normalisations name a step by its position in the model's list ("step 3" is the third step it wrote).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from engine.llm.plan_schema import CONDITION_OPERATORS, MAX_RAW_CHARS, PLAN_TYPES, SlotValues, parse_plan_text
from engine.llm.plan_steps import OPERATOR_ALIASES, SCALARS, STEP_KEYS, Draft, canon, cycle, ref, workflow_steps
from engine.pack import SPECIAL_INTENTS, Intent, Pack, Risk
from engine.slots import DEFAULT_LIMITS, SlotLimits, extract_slots
from protocol.workflow import Workflow, WorkflowType


@dataclass(frozen=True)
class ValidatedPlan:
    """A plan fit to run: the workflow and, in words, what normalisation changed in the model's answer."""

    workflow: Workflow
    normalisations: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RejectedPlan:
    """A plan that must not run, with every reason found (for the debug output or a re-prompt)."""

    reasons: list[str]


def validate_plan(
    raw: str | dict[str, Any],
    pack: Pack,
    *,
    max_steps: int,
    tz: tzinfo,
    now: datetime,
    limits: SlotLimits = DEFAULT_LIMITS,
    text: str = "",
    planner: str = "llm",
) -> ValidatedPlan | RejectedPlan:
    """Check the model's plan `raw` against `pack` (the shape of engine.llm.plan_schema.plan_json_schema).

    `limits` are the slot bounds the turn uses (settings.slots), `tz`/`now` resolve datetime slots said in
    words, `text` (the user's utterance, optional) fills the slots the model left out and applies the pack's
    conditional hints, as the local planners do. Never raises on bad output."""
    try:
        return _Validation(pack, max_steps=max_steps, tz=tz, now=now, limits=limits, text=text).run(raw, planner)
    except Exception as exc:  # noqa: BLE001 — a validator bug must reject the plan, never let it run unchecked
        return RejectedPlan([f"validation failed: {type(exc).__name__}: {exc}"])


class _Validation:
    def __init__(self, pack: Pack, *, max_steps: int, tz: tzinfo, now: datetime, limits: SlotLimits, text: str) -> None:
        self._pack, self._max, self._tz, self._limits, self._text = pack, max_steps, tz, limits, text
        self._now = now.astimezone(tz)
        self._values = SlotValues(limits=limits, tz=tz, now=now)
        self._by_canon = {canon(i.id): i for i in pack.intents}
        self.reasons: list[str] = []
        self.notes: list[str] = []

    def run(self, raw: str | dict[str, Any], planner: str) -> ValidatedPlan | RejectedPlan:
        doc = self._load(raw)
        steps = doc.get("steps") if isinstance(doc, dict) else None
        if doc is not None and (not isinstance(steps, list) or not steps):
            self.reasons.append("the plan has no steps" if isinstance(doc, dict) else "the plan is not a JSON object")
        if self.reasons:
            return RejectedPlan(self.reasons)
        assert isinstance(steps, list)  # else a reason was given above
        keys = self._keys(steps)
        drafts = [
            d
            for d in (self._draft(n, key, entry) for n, (key, entry) in enumerate(zip(keys, steps, strict=True), 1))
            if d
        ]
        if self.reasons:
            return RejectedPlan(self.reasons)
        kept, index = self._dedupe(drafts)
        if len(kept) > self._max:
            return RejectedPlan([f"{len(kept)} steps: a plan has at most {self._max}"])
        self._check_refs(kept, index)
        if self.reasons:
            return RejectedPlan(self.reasons)
        self._complete(kept, index)
        kind = self._kind(doc.get("type"), kept)
        return ValidatedPlan(Workflow(type=kind, steps=workflow_steps(kept, index), planner=planner), self.notes)

    # ---- reading ------------------------------------------------------------------------------

    def _load(self, raw: Any) -> Any:
        if isinstance(raw, (dict, list)):
            doc = raw
        elif not isinstance(raw, str):
            self.reasons.append(f"the plan is a {type(raw).__name__}, not JSON text")
            return None
        elif not raw.strip() or len(raw) > MAX_RAW_CHARS:
            self.reasons.append(
                "the reply is empty" if not raw.strip() else f"the reply is over {MAX_RAW_CHARS} characters"
            )
            return None
        else:
            doc, how = parse_plan_text(raw)
            if doc is None:
                self.reasons.append("the reply holds no JSON object")
                return None
            if how:
                self.notes.append(how)
        if isinstance(doc, list):
            self.notes.append("a bare list of steps: read as the plan's steps")
            doc = {"steps": doc}
        return doc

    def _keys(self, steps: list[Any]) -> list[int]:
        """The numbers references use: the steps' own `step` numbers when each has a distinct one (a model
        numbering from 0 or by tens), else positions 1..n."""
        own = [ref(s.get("step")) if isinstance(s, dict) else None for s in steps]
        numbers = [key for key in own if key is not None]
        if len(numbers) == len(own) and len(set(numbers)) == len(numbers):
            if numbers != list(range(1, len(steps) + 1)):
                self.notes.append(f"steps numbered {numbers}: renumbered 1..{len(steps)} in order")
            return numbers
        return list(range(1, len(steps) + 1))

    def _draft(self, n: int, key: int, entry: Any) -> Draft | None:
        where, before = f"step {n}", len(self.reasons)
        if not isinstance(entry, dict):
            self.reasons.append(f"{where} is not an object")
            return None
        intent = self._intent(entry.get("intent_id", entry.get("intent")), where)
        ignored = sorted(set(entry) - STEP_KEYS)
        if ignored:
            self.notes.append(f"{where}: ignored {ignored} (the catalog decides plugin and action)")
        slots = self._slots(intent, entry.get("slots"), where) if intent else {}
        deps = entry.get("depends_on") or []
        refs = [ref(d) for d in (deps if isinstance(deps, list) else [deps])]
        if None in refs:
            self.reasons.append(f"{where}: depends_on {deps!r} is not a list of step numbers")
        condition = self._condition(entry.get("condition"), where)
        confirm = entry.get("requires_confirmation", False)
        if not isinstance(confirm, bool):
            confirm = str(confirm).strip().lower() in ("true", "1", "yes")
            self.notes.append(f"{where}: requires_confirmation read as {confirm}")
        if len(self.reasons) > before or intent is None:
            return None
        depends_on = [r for r in dict.fromkeys(refs) if r is not None]  # a None was a reason given above
        return Draft(n, key, intent, slots, depends_on, condition, confirm)

    def _intent(self, raw: Any, where: str) -> Intent | None:
        if not isinstance(raw, str) or not raw.strip():
            self.reasons.append(f"{where} names no intent_id")
            return None
        intent = self._by_canon.get(canon(raw))
        if intent is None:
            self.reasons.append(f"{where}: unknown intent '{raw}'")
            return None
        if intent.id in SPECIAL_INTENTS:
            self.reasons.append(f"{where}: {intent.id} is not an executable intent")
            return None
        if intent.id != raw:
            self.notes.append(f"{where}: intent '{raw}' read as {intent.id}")
        return intent

    def _slots(self, intent: Intent, raw: Any, where: str) -> dict[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.reasons.append(f"{where}: slots is not an object")
            return {}
        specs, out = {s.name: s for s in intent.slots}, {}
        for name, value in raw.items():
            spec = specs.get(name)
            if spec is None:
                self.reasons.append(f"{where}: {intent.id} has no slot '{name}'")
            elif value is None or value == "":
                self.notes.append(f"{where}: empty slot {name} left out")  # the executor asks for it
            else:
                got, why = self._values.read(spec, value)
                if why:
                    self.reasons.append(f"{where}: slot {name}: {why}")
                    continue
                if got != value or type(got) is not type(value):
                    self.notes.append(f"{where}: slot {name} {value!r} read as {got!r}")
                out[name] = got
        return out

    def _condition(self, raw: Any, where: str) -> dict[str, Any] | None:
        if raw is None or raw == {}:
            return None
        if not isinstance(raw, dict):
            self.reasons.append(f"{where}: condition is not an object")
            return None
        step, name = ref(raw.get("step", raw.get("source_step"))), raw.get("field")
        op = str(raw.get("op", raw.get("operator", ""))).strip().lower()
        op, value = OPERATOR_ALIASES.get(op, op), raw.get("value")
        if step is None or not isinstance(name, str) or not name.strip():
            self.reasons.append(f"{where}: condition needs a step number and a field")
            return None
        if op not in CONDITION_OPERATORS:
            self.reasons.append(f"{where}: condition operator {op!r} is none of {list(CONDITION_OPERATORS)}")
            return None
        if op == "in" and not isinstance(value, list):
            value = [value]
        if not all(isinstance(v, SCALARS) for v in (value if isinstance(value, list) else [value])) or (
            op != "in" and isinstance(value, list)
        ):
            self.reasons.append(f"{where}: condition value {value!r} does not fit operator {op}")
            return None
        return {"step": step, "field": name.strip(), "operator": op, "value": value}

    # ---- structure ----------------------------------------------------------------------------

    def _dedupe(self, drafts: list[Draft]) -> tuple[list[Draft], dict[int, int]]:
        """Drop a step repeating the one before (same intent, slots and condition); a reference to it means
        the kept one. Returns the kept steps and model key -> new 1-based number."""
        kept: list[Draft] = []
        alias: dict[int, int] = {}
        for d in drafts:
            prev = kept[-1] if kept else None
            if prev and (d.intent.id, d.slots, d.condition) == (prev.intent.id, prev.slots, prev.condition):
                self.notes.append(f"step {d.pos} repeats step {prev.pos}: dropped")
                alias[d.key] = prev.key
                prev.depends_on += [k for k in d.depends_on if k not in prev.depends_on and k != prev.key]
                prev.confirm = prev.confirm or d.confirm
                continue
            kept.append(d)
        index = {d.key: n for n, d in enumerate(kept, 1)}
        index.update({k: index[v] for k, v in alias.items()})
        return kept, index

    def _check_refs(self, kept: list[Draft], index: dict[int, int]) -> None:
        """Every reference names a step of the plan, and an earlier one: no cycle, nothing waiting on later."""
        edges: dict[int, list[int]] = {}
        for n, d in enumerate(kept, 1):
            refs = d.depends_on + ([d.condition["step"]] if d.condition else [])
            for key in refs:
                if key not in index:
                    self.reasons.append(f"step {d.pos} refers to step {key}, which the plan does not have")
            edges[n] = [index[k] for k in refs if k in index]
        pos = [0, *(d.pos for d in kept)]
        loop = cycle(edges)
        if loop:
            self.reasons.append(f"steps {' → '.join(str(pos[n]) for n in loop)} form a cycle")
            return
        for n, targets in edges.items():
            for t in sorted(set(targets)):
                if t >= n:
                    self.reasons.append(f"step {pos[n]} refers to step {pos[t]}, which comes later")

    def _complete(self, kept: list[Draft], index: dict[int, int]) -> None:
        """§18.3's merge: the user's words fill slots and conditional hints; a condition's source is a
        dependency; the catalog's confirm / high risk forces the confirmation."""
        for n, d in enumerate(kept, 1):
            missing, where = [s for s in d.intent.slots if s.name not in d.slots], f"step {d.pos}"
            if self._text and missing:
                found = extract_slots(self._text, missing, now=self._now, tz=self._tz, limits=self._limits)
                if found:
                    d.slots.update(found)
                    self.notes.append(f"{where}: {sorted(found)} taken from the user's words")
            if d.condition is None and n > 1 and self._text:
                first = kept[n - 2]
                for h in self._pack.workflows.conditional_hints:
                    if (h.first, h.then) == (first.intent.id, d.intent.id) and any(
                        w in self._text for w in h.when_text
                    ):
                        d.condition = {"step": first.key, **h.condition.model_dump()}
                        d.confirm = d.confirm or h.requires_confirmation
                        self.notes.append(f"{where}: the pack's conditional hint {h.first} → {h.then} applied")
                        break
            source = kept[index[d.condition["step"]] - 1] if d.condition else None
            if source and index[source.key] not in {index[k] for k in d.depends_on}:
                d.depends_on.append(source.key)
                self.notes.append(f"{where} depends on step {source.pos}, whose result its condition reads")
            if (d.intent.confirm or d.intent.risk == Risk.high) and not d.confirm:
                d.confirm = True
                self.notes.append(f"{where}: {d.intent.id} needs confirmation (catalog)")

    def _kind(self, declared: Any, kept: list[Draft]) -> WorkflowType:
        if any(d.condition for d in kept):
            kind = WorkflowType.conditional
        elif declared == WorkflowType.conditional.value:
            # a condition the executor cannot check (如果下雨就关窗): the driver decides, as the heuristic planner does
            gated = [d for d in kept if d.depends_on] or kept[1:] or kept
            for d in gated:
                d.confirm = True
            self.notes.append(f"conditional without a checkable condition: steps {[d.pos for d in gated]} ask first")
            kind = WorkflowType.conditional
        else:
            kind = WorkflowType.single if len(kept) == 1 else WorkflowType.sequence
        if declared is not None and declared != kind.value:
            shown = declared if declared in PLAN_TYPES else repr(declared)
            self.notes.append(f"type {shown} read as {kind.value}")
        return kind
