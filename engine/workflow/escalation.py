"""Escalation to the LLM planner, the last planner of the local-first chain (seed 003 §15.2, §18).

It runs only when the local planners ran inside their budget and did not accept. The caller grows the turn's
budget first (budgets.turn_ms.llm) and tells a streaming client; the LLM then gets min(stages_ms.planner_llm, time
left). Its plan runs only once validated against the catalog (engine.llm.plan_validation) and grounded in the
clauses' evidence (engine.llm.grounding); otherwise the turn keeps the fusion decision, and a timeout or failure
degrades `planner`.
"""
from __future__ import annotations

from datetime import datetime

from engine.deadline import Deadline
from engine.llm.grounding import Extract, ungrounded
from engine.llm.planner import NAME, LlmPlanOutcome, LlmWorkflowPlanner
from engine.pack import Pack
from engine.settings import Settings
from engine.workflow.planners import Plan
from protocol.http_chat import LlmPlanDebug, PlannerDebug

STAGE = "planner_llm"


class LlmEscalation:
    def __init__(self, llm: LlmWorkflowPlanner, *, pack: Pack, settings: Settings, extract: Extract) -> None:
        self._llm, self._pack, self._settings, self._extract = llm, pack, settings, extract

    def wanted(self, plan: Plan, debug: PlannerDebug) -> bool:
        """The local planners ran inside their budget and did not accept."""
        return not plan.accepted and not debug.degraded and plan.analysis is not None

    @property
    def extra_ms(self) -> float:
        """What the turn's budget grows by when it escalates."""
        return self._settings.budgets.escalation_ms()

    async def plan(self, text: str, local: Plan, debug: PlannerDebug, deadline: Deadline, *, now: datetime,
                   history: list[dict] | None = None, memory: list[str] | None = None) -> Plan:
        """The LLM's plan if it may run, else `local` with the reason added; `debug.llm` says what happened."""
        assert local.analysis is not None
        outcome = await self._llm.plan(text, deadline=deadline, budget_s=self._settings.budgets.stage_s(STAGE),
                                       history=history, memory=memory, now=now)
        reasons = list(outcome.rejected.reasons) if outcome.rejected else ([outcome.error] if outcome.error else [])
        if outcome.plan is not None:
            reasons = ungrounded(outcome.plan.workflow, text=text, clauses=local.analysis.clauses, pack=self._pack,
                                 extract=self._extract, min_evidence=self._settings.planner.llm_min_evidence)
        accepted = outcome.plan is not None and not reasons
        debug.llm = _debug(outcome, accepted, reasons)
        debug.degraded = outcome.timed_out or outcome.error is not None
        if not accepted:
            said = outcome.reason if outcome.plan is None else f"{NAME}: plan not grounded in the words"
            debug.reason = f"{debug.reason}; {said}" if debug.reason else said
            return local
        debug.accepted_by, debug.reason = NAME, outcome.reason
        return outcome.to_plan()


def _debug(outcome: LlmPlanOutcome, accepted: bool, reasons: list[str]) -> LlmPlanDebug:
    reply = outcome.reply
    kind = "accepted" if accepted else "timed_out" if outcome.timed_out else "error" if outcome.error else "rejected"
    return LlmPlanDebug(outcome=kind, request_id=outcome.request_id, reasons=reasons,
                        normalisations=list(outcome.plan.normalisations) if outcome.plan else [],
                        ttft_ms=reply.ttft_ms if reply else None, prompt_tokens=reply.prompt_tokens if reply else 0,
                        completion_tokens=reply.completion_tokens if reply else 0)
