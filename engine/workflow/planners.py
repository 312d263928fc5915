"""The local planners, local first (seed 003 §15.2, §16, §17): a strict template match over the pack's
`workflows.yaml`, then the heuristic planner over the clause analysis. Each returns a `Plan`, accepted or not."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.cues import reason_clause
from engine.fusion import FusionResult, RouteDecision
from engine.pack import ConditionalHint, Pack, Risk, StepHint
from engine.polarity import Polarity
from engine.workflow.analysis import ClauseScore
from protocol.turn_debug import Candidate
from protocol.workflow import StepCondition, Workflow, WorkflowStep, WorkflowType

Extract = Callable[..., dict[str, Any]]  # (text, slot specs, free_text=False) -> values found


@dataclass
class TurnAnalysis:
    """What every planner reads: the turn's text, its analysed clauses and the detector's labels for the turn."""

    text: str
    clauses: list[ClauseScore]
    detector_prior: list[Candidate] = field(default_factory=list)

    def matched(self) -> list[tuple[str, ClauseScore]]:
        """The intents the clauses chose, in the order said; a clause repeating the one before (context such as
        太热了 before 开空调) adds nothing."""
        out: list[tuple[str, ClauseScore]] = []
        for clause in self.clauses:
            for intent in clause.selected:
                if not out or out[-1][0] != intent:
                    out.append((intent, clause))
        return out

    def asking(self, reason: re.Pattern[str] | None) -> list[tuple[str, ClauseScore]]:
        """`matched` less the clauses that only report (`rules.reasons`: 客户说想换个时间 beside 删掉吧): no step."""
        return [(i, c) for i, c in self.matched() if reason is None or not reason.search(c.text)]

    def sole_request(self) -> str | None:
        """The intent of the one clause that asks for something when the others only give reasons (家里人在路边等着呢，
        把门锁打开让她上车); None when the turn is one clause or asks for none or several."""
        chosen = {intent for intent, _ in self.matched()}
        return chosen.pop() if len(self.clauses) >= 2 and len(chosen) == 1 else None


@dataclass
class Plan:
    accepted: bool
    planner: str
    reason: str
    workflow: Workflow | None = None
    analysis: TurnAnalysis | None = None  # what the planners read (the LLM plan is grounded in it)


class StepBuilder:
    """Turns chosen intents into workflow steps: ids, plugin/agent/action, slots from the step's clause and then
    from the whole text, and confirmation from the step, the intent's own flag or a high risk level."""

    def __init__(self, pack: Pack, extract: Extract) -> None:
        self._pack = pack
        self._extract = extract

    def steps(self, text: str, picks: Sequence[tuple[str, str, StepHint | None]]) -> list[WorkflowStep]:
        steps: list[WorkflowStep] = []
        whole: dict[str, Any] | None = None
        for n, (intent_id, clause, hint) in enumerate(picks, start=1):
            intent = self._pack.intent(intent_id)
            assert intent is not None
            slots = self._extract(clause, intent.slots)
            missing = [s for s in intent.slots if s.name not in slots]
            if missing:  # 查一下订单A12345，如果还没发货就帮我取消: the order number is said once, for both steps
                whole = self._extract(text, intent.slots) if whole is None else whole
                slots.update({s.name: whole[s.name] for s in missing if s.name in whole})
            previous = steps[-1].step_id if steps else None
            condition = None
            if hint is not None and hint.condition is not None and previous is not None:
                condition = StepCondition(
                    source_step=previous,
                    field=hint.condition.field,
                    operator=hint.condition.operator,
                    value=hint.condition.value,
                )
            steps.append(
                WorkflowStep(
                    step=n,
                    step_id=f"s{n}",
                    intent_id=intent.id,
                    plugin_id=intent.plugin,
                    agent=intent.agent,
                    action=intent.action,
                    slots=slots,
                    clause=clause,
                    condition=condition,
                    depends_on=[previous]
                    if previous and hint is not None and (hint.depends_on_previous or condition)
                    else [],
                    requires_confirmation=bool(
                        (hint and hint.requires_confirmation) or intent.confirm or intent.risk == Risk.high
                    ),
                )
            )
        return steps


class TemplateWorkflowPlanner:
    """A template is planned when the clauses' intents begin with its sequence and its trigger words all occur."""

    name = "template"

    def __init__(self, pack: Pack, builder: StepBuilder) -> None:
        self._templates = pack.workflows.templates
        self._builder = builder
        self._reason = reason_clause(pack)

    def plan(self, analysis: TurnAnalysis) -> Plan:
        matched = analysis.asking(self._reason)
        if len(matched) < 2:
            return Plan(False, self.name, "fewer than two intents in the clauses")
        ids = [i for i, _ in matched]
        for t in self._templates:
            if ids[: len(t.intent_sequence)] == t.intent_sequence and all(
                k in analysis.text for k in t.trigger_keywords
            ):
                hints: Sequence[StepHint | None] = t.steps or [None] * len(t.intent_sequence)
                picks = [(i, c.text, h) for (i, c), h in zip(matched, hints, strict=False)]
                steps = self._builder.steps(analysis.text, picks)
                return Plan(
                    True,
                    f"{self.name}:{t.id}",
                    f"template {t.id}",
                    Workflow(type=WorkflowType(t.type), steps=steps, planner=f"{self.name}:{t.id}"),
                )
        return Plan(False, self.name, "no template matches")


class HeuristicWorkflowPlanner:
    """Each chosen clause intent becomes a step in the order said; conditions come from the pack's conditional
    hints (seed 003 §17.6); the type is conditional when a clause states a condition, else a sequence."""

    name = "heuristic"

    def __init__(self, pack: Pack, builder: StepBuilder, *, max_steps: int) -> None:
        self._hints = pack.workflows.conditional_hints
        self._lead = pack.workflows.lead
        self._builder = builder
        self._max_steps = max_steps
        self._reason = reason_clause(pack)

    def plan(self, analysis: TurnAnalysis) -> Plan:
        matched = analysis.asking(self._reason)
        if len(matched) < 2:
            return Plan(False, self.name, "fewer than two intents in the clauses")
        # seed 000's Router: emotion support comes before the task, whatever the order said
        matched.sort(key=lambda m: 0 if m[0] in self._lead else 1)
        if len(matched) > self._max_steps:
            return Plan(False, self.name, f"more than {self._max_steps} steps")
        picks: list[tuple[str, str, StepHint | None]] = []
        conditional = False
        for n, (intent, clause) in enumerate(matched):
            hint = self._hint(matched[n - 1][0], intent, analysis.text) if n else None
            if hint is None and clause.condition:
                # a condition no hint can check (如果下雨就关窗): the driver decides when asked
                hint = StepHint(depends_on_previous=n > 0, requires_confirmation=True)
            conditional = conditional or bool(clause.condition) or hint is not None
            picks.append((intent, clause.text, hint))
        steps = self._builder.steps(analysis.text, picks)
        kind = WorkflowType.conditional if conditional else WorkflowType.sequence
        return Plan(
            True,
            self.name,
            f"{len(steps)} steps from {len(analysis.clauses)} clauses",
            Workflow(type=kind, steps=steps, planner=self.name),
        )

    def _hint(self, first: str, then: str, text: str) -> StepHint | None:
        for h in self._hints:
            if (h.first, h.then) == (first, then) and any(w in text for w in h.when_text):
                return _as_step_hint(h)
        return None


def _as_step_hint(h: ConditionalHint) -> StepHint:
    return StepHint(depends_on_previous=True, condition=h.condition, requires_confirmation=h.requires_confirmation)


class LocalFirstPlanner:
    """The planner chain: the first planner that accepts wins; none accepting keeps the fusion decision."""

    def __init__(self, planners: Sequence[TemplateWorkflowPlanner | HeuristicWorkflowPlanner]) -> None:
        self._planners = list(planners)

    def plan(self, analysis: TurnAnalysis) -> Plan:
        reasons = []
        for planner in self._planners:
            plan = planner.plan(analysis)
            if plan.accepted:
                return plan
            reasons.append(f"{planner.name}: {plan.reason}")
        return Plan(False, "", "; ".join(reasons))


def settle(fusion: FusionResult, plan: Plan, text: str, polarity: Polarity) -> FusionResult:
    """Fusion read the whole turn, reasons included (风直往脸上扑 pulls toward more wind); when it was not sure, no plan
    was made and one clause alone asks for something, that clause decides between fusion's top two: it is executed.
    A sure fusion stays: a reason can itself sound like a request (入职培训往后推了，本周计划得重排). The whole turn's
    words still say which side (雨刮咔哒咔哒响，停了: the clause names the wiper, the turn asks it off)."""
    if fusion.decision == RouteDecision.execute or plan.accepted or plan.analysis is None:
        return fusion
    sole = plan.analysis.sole_request()
    if sole is None or sole not in [c.intent for c in fusion.ranked[:2]]:
        return fusion
    return polarity.read(text, fusion.settled(sole, f"the one request clause reads {sole}"))
