"""Admission control that knows the budget: shed a turn that could not finish inside it (config/TUNING.md).

For a new turn of modality m, with n turns of m in flight, the predicted service time is

    R_m + n × Q_m

R_m: what a turn costs without queueing — the fastest recent service time (admission to reply), a minimum that
follows a faster turn at once and a slower machine slowly (it rises by `drift`, 0.2 %, per finished turn), so
overload cannot inflate it. Q_m: what each turn ahead added to a turn's time, learnt from the turns themselves — a
turn admitted with k ahead of it that took T contributes (T − R_m) / k to a moving average (`smoothing`). It is
measured, not derived from a throughput peak, so it holds whatever the mix of turns, the batching, or another
orchestrator replica sharing the same model replicas. A turn is shed (503 + Retry-After) when the prediction
exceeds `headroom` × the time it may take (`Budgets.admission_ms`: its turn budget, or less, the model stage
budgets it queues under — a turn admitted to wait past its encoder's budget would only come back degraded), or
when the hard cap of turns in flight is reached. Until a turn has finished with others ahead of it there is no
queueing estimate and only the cap applies; with nothing in flight a turn is always admitted.
"""
from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from engine.errors import Overloaded
from engine.settings import AdmissionConfig


@dataclass
class _Load:
    in_flight: int = 0
    fast_ms: float | None = None       # R
    per_turn_ms: float | None = None   # Q


class Admission:
    def __init__(self, cfg: AdmissionConfig, clock=time.monotonic) -> None:
        self.cfg = cfg
        self.in_flight = 0
        self._clock = clock
        self._loads: dict[str, _Load] = {}

    def predict_ms(self, modality: str = "text") -> float:
        """The predicted service time of one more turn of `modality` now (0 when nothing is known yet)."""
        load = self._loads.get(modality)
        if load is None or load.fast_ms is None:
            return 0.0
        return load.fast_ms + load.in_flight * (load.per_turn_ms or 0.0)

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
            return (f"A new turn would take about {predicted:.0f} ms with {load.in_flight} in flight; "
                    f"it must finish within {budget_ms:.0f} ms to meet its budgets. Retry shortly.")
        return None

    @asynccontextmanager
    async def turn(self, budget_ms: float, modality: str = "text") -> AsyncIterator[None]:
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
            self._finished(load, (self._clock() - start) * 1000.0, ahead)

    def _finished(self, load: _Load, service_ms: float, ahead: int) -> None:
        load.fast_ms = service_ms if load.fast_ms is None else min(service_ms, load.fast_ms * (1 + self.cfg.drift))
        if ahead:
            sample = max(0.0, service_ms - load.fast_ms) / ahead
            q, a = load.per_turn_ms, self.cfg.smoothing
            load.per_turn_ms = sample if q is None else q + a * (sample - q)
