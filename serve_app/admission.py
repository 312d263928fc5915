"""Admission control that knows the budget: shed a turn that could not finish inside it (config/TUNING.md).

For a new turn of modality m, with n turns of m in flight, the predicted service time is

    R_m + n / C_m

R_m: what a turn costs without queueing — the fastest recent service time (admission to reply), a minimum that
follows a faster turn at once and a slower machine slowly (it rises by `drift`, 0.2 %, per finished turn), so overload
cannot inflate it. C_m: the replica's capacity in turns/s, the best completion rate seen over a one-second
window throughout which it was busy (decaying as slowly). n / C_m is the time the turns ahead need. A turn is shed
(503 + Retry-After) when the prediction exceeds `headroom` × the time it may take (`Budgets.admission_ms`: its
turn budget, or less, the model stage budgets it queues under — a turn admitted to wait past its encoder's
budget would only come back degraded), or when the hard cap of turns in flight is reached. Until a busy window was seen there is no capacity estimate
and only the cap applies; with nothing in flight a turn is always admitted.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from engine.errors import Overloaded
from engine.settings import AdmissionConfig

WINDOW_S = 1.0


@dataclass
class _Load:
    in_flight: int = 0
    fast_ms: float | None = None           # R
    capacity: float | None = None          # C, turns/s
    finished: deque = field(default_factory=deque)
    busy_since: float | None = None


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
        queue_ms = load.in_flight / load.capacity * 1000.0 if load.capacity else 0.0
        return load.fast_ms + queue_ms

    def capacity(self, modality: str = "text") -> float | None:
        load = self._loads.get(modality)
        return load.capacity if load else None

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
        now = self._clock()
        if not load.in_flight:
            load.busy_since = now
        self.in_flight += 1
        load.in_flight += 1
        try:
            yield
        finally:
            end = self._clock()
            self._finished(load, (end - now) * 1000.0, end)
            self.in_flight -= 1
            load.in_flight -= 1
            if not load.in_flight:
                load.busy_since = None

    def _finished(self, load: _Load, service_ms: float, now: float) -> None:
        load.fast_ms = service_ms if load.fast_ms is None else min(service_ms, load.fast_ms * (1 + self.cfg.drift))
        load.finished.append(now)
        while load.finished and load.finished[0] <= now - WINDOW_S:
            load.finished.popleft()
        if load.capacity is not None:
            load.capacity *= 1 - self.cfg.drift
        if load.busy_since is not None and now - load.busy_since >= WINDOW_S:
            rate = len(load.finished) / WINDOW_S  # every turn that finished in a window the replica was busy throughout
            load.capacity = rate if load.capacity is None else max(load.capacity, rate)
