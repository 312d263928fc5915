"""Admission control that knows the budget: shed a turn that could not finish inside it (config/TUNING.md).

A new turn of modality m, arriving with n turns of m in flight, is predicted to take what recent turns admitted
with as many ahead of them took. Each finished turn, admitted with k ahead, updates a moving average of service
time (admission to reply) for depth k (`smoothing`). The prediction for depth n is the largest recent average at
any depth up to n, so it never falls as the queue grows; past the deepest recently measured depth d it adds, per
extra turn, what one turn ahead was measured to add on average, Q_m ((T − R_m) / k over all finished turns; R_m
is the fastest recent service time, which rises by `drift` per finished turn so a slower machine is followed).

Measured per depth, the prediction holds whatever the batching does: a batched model replica takes a few turns
ahead nearly as fast as one, which a straight line through R_m would overrate at every depth. A depth's average
counts once `min_samples` turns measured it, starting from their median (one slow turn, a pause of the machine,
would otherwise shut every deeper queue for `stale_s`), and only while it is recent (`stale_s`). A finished turn
moves an average as if it took at most `outlier` x that average: a stall that makes the turns in flight take
seconds cannot lift a depth past its threshold on its own. A queue that sheds at depth n measures nothing there,
so after `stale_s` depth n is predicted again from the depths below and one turn probes it. Q_m counts only while recent
too: a queue forming after a quiet spell is not judged by what a turn ahead cost in a burst long past. A turn is shed
(503 + Retry-After) when the prediction exceeds `headroom` × the time it may take (`Budgets.admission_ms`: its turn
budget, or less, the model stage budgets it queues under — a turn admitted to wait past its encoder's budget
would only come back degraded), or when the hard cap of turns in flight is reached. With nothing in flight a
turn is always admitted, and with nothing measured beyond the recent depths only the cap applies.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from statistics import median

from config.serving import AdmissionConfig
from engine.deadline import Deadline
from engine.errors import Overloaded


@dataclass
class _Depth:
    """Turns admitted with k ahead: the median of the first `min_samples` service times, then a moving average."""

    at: float  # last update
    first: list[float]
    average: float | None = None  # set once min_samples turns measured the depth

    @property
    def turns(self) -> int:
        return len(self.first)


@dataclass
class _Load:
    in_flight: int = 0
    fast_ms: float | None = None  # R
    per_turn_ms: float | None = None  # Q
    per_turn_at: float = float("-inf")  # when Q was last updated
    by_depth: dict[int, _Depth] = field(default_factory=dict)  # k ahead


class Admission:
    def __init__(self, cfg: AdmissionConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.in_flight = 0
        self._clock = clock
        self._loads: dict[str, _Load] = {}

    def predict_ms(self, modality: str = "text") -> float:
        """The predicted service time of one more turn of `modality` now (0 when nothing is known yet)."""
        load = self._loads.get(modality)
        if load is None or load.fast_ms is None:
            return 0.0
        n, now = load.in_flight, self._clock()
        recent = {
            k: depth.average
            for k, depth in load.by_depth.items()
            if k <= n and now - depth.at <= self.cfg.stale_s and depth.average is not None
        }
        per_turn = (load.per_turn_ms or 0.0) if now - load.per_turn_at <= self.cfg.stale_s else 0.0
        if not recent:
            return load.fast_ms + n * per_turn
        deepest = max(recent)
        return max(recent.values()) + (n - deepest) * per_turn

    def capacity(self, modality: str = "text") -> float | None:
        """Turns/s the replica's models get through once queued (1 / Q), or None before it was measured."""
        load = self._loads.get(modality)
        return 1000.0 / load.per_turn_ms if load is not None and load.per_turn_ms else None

    def refusal(self, budget_ms: float, modality: str = "text") -> str | None:
        """Why a new turn would be shed now, or None when it is admitted."""
        cfg = self.cfg
        if self.in_flight >= cfg.max_in_flight_turns:
            return f"{self.in_flight} turns in flight (limit {cfg.max_in_flight_turns}); retry shortly."
        load = self._loads.get(modality)
        predicted = self.predict_ms(modality)
        if load is not None and load.in_flight and predicted > cfg.headroom * budget_ms:
            return (
                f"A new turn would take about {predicted:.0f} ms with {load.in_flight} in flight; "
                f"it must finish within {budget_ms:.0f} ms to meet its budgets. Retry shortly."
            )
        return None

    @asynccontextmanager
    async def turn(
        self, budget_ms: float, modality: str = "text", *, deadline: Deadline | None = None
    ) -> AsyncIterator[None]:
        """Admit a turn or raise Overloaded. A turn whose `deadline` escalated (it waited on the LLM planner, seconds
        on a CPU) teaches nothing about the model stages' queue: its time is not learnt."""
        reason = self.refusal(budget_ms, modality)
        if reason is not None:
            raise Overloaded(reason)
        load = self._loads.setdefault(modality, _Load())
        ahead, start = load.in_flight, self._clock()
        self.in_flight += 1
        load.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            load.in_flight -= 1
            if deadline is None or not deadline.escalated:
                self.record(modality, ahead, (self._clock() - start) * 1000.0)

    def record(self, modality: str, ahead: int, service_ms: float) -> None:
        """Learn from one finished turn of `modality` admitted with `ahead` turns in flight."""
        cfg, load = self.cfg, self._loads.setdefault(modality, _Load())
        load.fast_ms = service_ms if load.fast_ms is None else min(service_ms, load.fast_ms * (1 + cfg.drift))
        now, depth = self._clock(), load.by_depth.get(ahead)
        if depth is None or now - depth.at > cfg.stale_s:
            depth = load.by_depth[ahead] = _Depth(at=now, first=[])
        depth.at = now
        if depth.average is not None:
            depth.average = self._blend(depth.average, service_ms)
        else:
            depth.first.append(service_ms)
            if depth.turns >= cfg.min_samples:
                depth.average = median(depth.first)
        if ahead:
            sample = max(0.0, service_ms - load.fast_ms) / ahead
            q = load.per_turn_ms
            load.per_turn_ms = sample if q is None else self._blend(q, sample)
            load.per_turn_at = now

    def _blend(self, average: float, sample: float) -> float:
        """One step of a moving average whose sample counts as at most `outlier` x the average: a stall that makes a
        few turns take seconds moves it by a bounded step, so it cannot lift a depth past its threshold on its own
        (and shedding there would keep it there: a shed depth measures nothing). A lasting change still moves it,
        by at most `smoothing` x (`outlier` - 1) of itself per turn."""
        capped = min(sample, self.cfg.outlier * average) if average > 0 else sample
        return average + self.cfg.smoothing * (capped - average)
