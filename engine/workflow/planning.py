"""The planner stage of a turn (seed 003 §20): when the trigger says so, the local planners plan over the clauses
the router embedded, inside the turn's deadline; a late or failed planner degrades `planner`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from config.settings import Settings
from engine.deadline import Deadline, StageTimeout
from engine.keyword import KeywordMatcher
from engine.pack import Pack, SlotSpec
from engine.router import Route
from engine.workflow.analysis import ClauseAnalyzer
from engine.workflow.planners import (
    Extract,
    HeuristicWorkflowPlanner,
    LocalFirstPlanner,
    Plan,
    StepBuilder,
    TemplateWorkflowPlanner,
    TurnAnalysis,
)
from engine.workflow.trigger import LEXICAL, PlanTrigger
from protocol.turn_debug import Candidate, ClauseDebug, PlannerDebug

PLANNER = "planner"
EVIDENCE_SLOTS = [SlotSpec(name="temperature", type="temperature"), SlotSpec(name="order_id", type="order_id")]
Faults = Callable[[str], Awaitable[None]]


class PlannerStage:
    def __init__(
        self, *, pack: Pack, settings: Settings, keywords: KeywordMatcher, extract: Extract, faults: Faults | None
    ) -> None:
        self._settings = settings
        self._analyzer = ClauseAnalyzer(pack, settings.planner, slot_values=lambda t: set(extract(t, EVIDENCE_SLOTS)))
        self._trigger = PlanTrigger(settings.planner, keywords, self._analyzer)
        builder = StepBuilder(pack, extract)
        self._planner = LocalFirstPlanner(
            [
                TemplateWorkflowPlanner(pack, builder),
                HeuristicWorkflowPlanner(pack, builder, max_steps=settings.planner.max_steps),
            ]
        )
        self._faults = faults

    async def plan(self, text: str, route: Route, deadline: Deadline) -> tuple[Plan, PlannerDebug] | None:
        """The planner stage, when the trigger says so, over the clauses the router embedded; a late or failed
        planner degrades (`planner`) and the turn keeps the fusion decision."""
        clauses = list(route.clauses) or [text]
        trigger = self._trigger.reason(text, clauses, route) if self._settings.planner.enabled else None
        if trigger is None:
            return None
        try:
            async with deadline.phase(PLANNER, self._settings.budgets.stage_s(PLANNER)):
                if self._faults is not None:
                    await self._faults(PLANNER)
                analysis = self._analysis(text, route, marked=trigger in LEXICAL)
                plan = self._planner.plan(analysis)
        except (StageTimeout, Exception) as exc:  # noqa: BLE001 — a planner failure is a declared degradation
            deadline.degrade(PLANNER)
            reason = str(exc) if isinstance(exc, StageTimeout) else f"{type(exc).__name__}: {exc}"
            return Plan(False, "", reason), PlannerDebug(trigger=trigger, reason=reason, degraded=True)
        debug = PlannerDebug(
            trigger=trigger,
            accepted_by=plan.planner or None,
            reason=plan.reason,
            clauses=[ClauseDebug(text=c.text, candidates=c.ranked(3), selected=c.selected) for c in analysis.clauses],
            detector_prior=route.detected,
        )
        plan.analysis = analysis
        return plan, debug

    def _analysis(self, text: str, route: Route, *, marked: bool) -> TurnAnalysis:
        """Each clause scored with what the served heads said of it (one pass embedded them all); a single clause
        with what they said of the whole text."""
        if route.clauses:
            clauses = list(route.clauses)
            none: tuple[list[Candidate], ...] = ([],) * len(route.clauses)
            cls, det = route.clause_scores.get("classifier", none), route.clause_scores.get("detector", none)
        else:
            clauses, cls, det = [text], (route.stages["classifier"].candidates,), (route.detector.candidates,)
        scored = [
            self._analyzer.analyze(c, classifier=list(k), detector=list(d), marked=marked)
            for c, k, d in zip(clauses, cls, det, strict=False)
        ]
        return TurnAnalysis(text=text, clauses=scored, detector_prior=route.detected)
