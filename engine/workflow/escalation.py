"""Escalation to the LLM planner, the last planner of the local-first chain (seed 003 §15.2, §18).

It runs only when the local planners ran inside their budget and did not accept, the turn's encoder answered
(without it no head has evidence to ground a plan in, and its lateness means the machine is out of time), and
more than the detector says there is a second request (a request said with its reason is not planned). The
caller grows the turn's budget first (budgets.turn_ms.llm) and tells a streaming client; the LLM then gets
min(stages_ms.planner_llm, time left). Its plan runs only once validated against the catalog
(engine.llm.plan_validation) and grounded in the clauses' evidence (engine.llm.grounding); otherwise the turn keeps
the fusion decision, and a timeout or failure degrades `planner`.

A planner that cannot keep up (a small model on a busy CPU) would make every escalating turn wait its whole budget
for nothing, so after `llm.hold_after_timeouts` late calls in a row escalation is held: such turns keep the local
decision at once (`planner` degraded, `llm.outcome: held`), and one turn per `llm.probe_every_s` escalates all the
same; a probe that finishes in time ends the hold.

The LLM layer may be several backends (`llm.use.planner`: the in-cluster Planner, then OpenAI-compatible endpoints as
seed 003's cloud planner): each is asked in order, inside what is left of the same budget, until one's plan is valid
and grounded; each has its own hold, and a busy, failing or late one only passes the turn on to the next.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal

from config.settings import Settings
from engine.deadline import Deadline
from engine.llm.grounding import Extract, ungrounded
from engine.llm.plan_outcome import NAME, LlmPlanOutcome
from engine.llm.planner import PLANNER, LlmWorkflowPlanner
from engine.model_client import ENCODER
from engine.pack import Pack
from engine.workflow.planners import Plan
from protocol.turn_debug import LlmPlanDebug, PlannerDebug

STAGE = "planner_llm"


class EscalationHold:
    """Counts the LLM planner's late calls in a row; after `after` of them it holds escalation, letting one probe
    through per `probe_every_s` (`after` 0: never holds)."""

    def __init__(self, after: int, probe_every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._after, self._probe_every_s, self._clock = after, probe_every_s, clock
        self.late_in_a_row = 0
        self._last_try = float("-inf")

    @property
    def held(self) -> bool:
        return 0 < self._after <= self.late_in_a_row

    def ready(self) -> bool:
        """Whether a turn now would be admitted (without counting it as the probe)."""
        return not (self.held and self._clock() - self._last_try < self._probe_every_s)

    def admit(self) -> bool:
        """Whether this turn may escalate; a turn admitted while held is the probe."""
        if not self.ready():
            return False
        self._last_try = self._clock()
        return True

    def record(self, late: bool) -> None:
        self.late_in_a_row = self.late_in_a_row + 1 if late else 0


class LlmEscalation:
    def __init__(
        self,
        llm: LlmWorkflowPlanner | Sequence[LlmWorkflowPlanner],
        *,
        pack: Pack,
        settings: Settings,
        extract: Extract,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`llm`: the LLM planner, or the planners of `llm.use.planner` in the order they are asked."""
        planners = [llm] if isinstance(llm, LlmWorkflowPlanner) else list(llm)
        if not planners:
            raise ValueError("an escalation needs at least one LLM planner")
        self._pack, self._settings, self._extract = pack, settings, extract
        self._layers = [
            (p, EscalationHold(settings.llm.hold_after_timeouts, settings.llm.probe_every_s, clock)) for p in planners
        ]

    @property
    def hold(self) -> EscalationHold:
        """The first backend's hold (the only one with a single LLM planner)."""
        return self._layers[0][1]

    def wanted(self, plan: Plan, debug: PlannerDebug, deadline: Deadline) -> bool:
        """The local planners ran inside their budget and did not accept, and escalation is not held for every
        backend; a held one is said in `debug` and degrades `planner` (the turn keeps the local decision at once)."""
        if plan.accepted or debug.degraded or plan.analysis is None:
            return False
        if debug.trigger == "detector" and len(plan.analysis.matched()) == 1:
            # only the detector read two requests; nothing in the words joins two, and the clauses name one: a
            # request said with its reason (空调关了吧，冷死了). The LLM would be asked to split what was said once,
            # and the turn would wait seconds for it; the fusion decision stands
            _said(debug, f"{NAME}: not asked, one clause names a request and nothing in the words joins a second")
            return False
        if ENCODER in deadline.degraded:
            # every head lost its input: no model evidence to ground a plan in, and a turn whose encoder missed its
            # deadline is on a machine that is out of time already; the LLM would add seconds of its work
            _said(debug, f"{NAME}: not asked, the encoder was degraded")
            return False
        if any(hold.ready() for _, hold in self._layers):
            return True
        reason = self._held_reason(self.hold)
        debug.llm = LlmPlanDebug(outcome="held", backend=self._layers[0][0].backend, reasons=[reason])
        debug.degraded = True
        _said(debug, reason)
        deadline.degrade(PLANNER)
        return False

    def _held_reason(self, hold: EscalationHold) -> str:
        return (
            f"{NAME}: held, the last {hold.late_in_a_row} calls missed their budget "
            f"(one turn per {self._settings.llm.probe_every_s:g} s tries again)"
        )

    @property
    def extra_ms(self) -> float:
        """What the turn's budget grows by when it escalates."""
        return self._settings.budgets.escalation_ms()

    async def plan(
        self,
        text: str,
        local: Plan,
        debug: PlannerDebug,
        deadline: Deadline,
        *,
        now: datetime,
        history: list[dict[str, Any]] | None = None,
        memory: list[str] | None = None,
        user_profile: dict[str, Any] | None = None,
    ) -> Plan:
        """The first LLM plan that may run, else `local` with the reasons added; `debug.llm` says what the deciding
        backend did (`debug.llm_attempts` each one's, when more than one was asked)."""
        assert local.analysis is not None
        attempts: list[LlmPlanDebug] = []
        said: list[str] = []
        for planner, hold in self._layers:
            if not hold.admit():
                held = LlmPlanDebug(outcome="held", backend=planner.backend, reasons=[self._held_reason(hold)])
                attempts.append(held)
                said.append(f"{planner.name}: held")
                continue
            if attempts and deadline.work_remaining_s() <= 0:
                break  # the turn's time is spent: the next backend could not even be asked
            budget_s = self._settings.budgets.stage_s(STAGE)
            outcome = await planner.plan(
                text,
                deadline=deadline,
                budget_s=min(budget_s, planner.timeout_s) if planner.timeout_s else budget_s,
                history=history,
                memory=memory,
                user_profile=user_profile,
                now=now,
                degrade=False,
            )
            hold.record(outcome.timed_out)
            reasons = list(outcome.rejected.reasons) if outcome.rejected else ([outcome.error] if outcome.error else [])
            if outcome.plan is not None:
                reasons = ungrounded(
                    outcome.plan.workflow,
                    text=text,
                    clauses=local.analysis.clauses,
                    pack=self._pack,
                    extract=self._extract,
                    min_evidence=self._settings.planner.llm_min_evidence,
                )
            accepted = outcome.plan is not None and not reasons
            attempts.append(_debug(outcome, accepted, reasons, planner.backend))
            if accepted:
                debug.llm, debug.llm_attempts = attempts[-1], attempts if len(attempts) > 1 else []
                debug.accepted_by, debug.reason = outcome.planner, outcome.reason
                return outcome.to_plan()
            said.append(
                outcome.reason if outcome.plan is None else f"{outcome.planner}: plan not grounded in the words"
            )
        debug.llm, debug.llm_attempts = (attempts[-1] if attempts else None), attempts if len(attempts) > 1 else []
        debug.degraded = any(a.outcome in ("timed_out", "error", "busy", "held") for a in attempts)
        if debug.degraded:
            deadline.degrade(PLANNER)
        for reason in said:
            _said(debug, reason)
        return local


def _said(debug: PlannerDebug, reason: str) -> None:
    debug.reason = f"{debug.reason}; {reason}" if debug.reason else reason


def _debug(outcome: LlmPlanOutcome, accepted: bool, reasons: list[str], backend: str) -> LlmPlanDebug:
    reply = outcome.reply
    kind: Literal["accepted", "rejected", "timed_out", "error", "busy"] = (
        "accepted"
        if accepted
        else "timed_out"
        if outcome.timed_out
        else "busy"
        if outcome.busy
        else "error"
        if outcome.error
        else "rejected"
    )
    return LlmPlanDebug(
        outcome=kind,
        backend=backend,
        request_id=outcome.request_id,
        reasons=reasons,
        normalisations=list(outcome.plan.normalisations) if outcome.plan else [],
        ttft_ms=reply.ttft_ms if reply else None,
        prompt_tokens=reply.prompt_tokens if reply else 0,
        cached_tokens=reply.cached_tokens if reply else 0,
        completion_tokens=reply.completion_tokens if reply else 0,
    )
