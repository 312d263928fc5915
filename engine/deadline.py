"""A turn's absolute deadline, stamped on arrival, and the bounded, cancellable stage calls built on it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

# When the innermost phase running in this task ends (time.monotonic()): a step inside it that has a cheap fallback
# (a template instead of a generated text) reads it so that it falls back before the phase is cancelled.
_PHASE_ENDS: ContextVar[float | None] = ContextVar("baton_phase_ends", default=None)


def phase_time_left() -> float | None:
    """Seconds left in the innermost `Deadline.phase` this code runs in; None outside every phase."""
    ends = _PHASE_ENDS.get()
    return None if ends is None else max(0.0, ends - time.monotonic())


class StageTimeout(Exception):
    def __init__(self, stage: str, timeout_s: float) -> None:
        super().__init__(f"{stage} exceeded {timeout_s * 1000:.0f} ms")
        self.stage = stage


@dataclass
class Deadline:
    """Wall-clock deadline (epoch seconds) of one request plus the timings its phases collect.

    `started` is the request's arrival at the ingress; `budget_ms` runs from there. `reserve_ms` is held back
    for the last phase (the commit): model stages may use the time up to `work_at`, the commit up to `at`.
    `stages_ms` adds up each stage's time; `spans_ms` gives each stage's [start, end] in ms from arrival
    (a stage met twice spans both visits).
    """

    budget_ms: float
    started: float = field(default_factory=time.time)
    reserve_ms: float = 0.0
    stages_ms: dict[str, float] = field(default_factory=dict)
    spans_ms: dict[str, list[float]] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    escalated: bool = False

    def escalate(self, extra_ms: float) -> None:
        """Grow the budget by `extra_ms`, once: the turn was handed to a slower stage it declares (the LLM planner)."""
        if not self.escalated:
            self.budget_ms += extra_ms
            self.escalated = True

    @property
    def at(self) -> float:
        return self.started + self.budget_ms / 1000.0

    @property
    def work_at(self) -> float:
        return self.at - self.reserve_ms / 1000.0

    def remaining_s(self) -> float:
        return max(0.0, self.at - time.time())

    def work_remaining_s(self) -> float:
        return max(0.0, self.work_at - time.time())

    def elapsed_ms(self) -> float:
        return (time.time() - self.started) * 1000.0

    def timeout_for(self, stage_budget_s: float, *, final: bool = False) -> float:
        """min(stage budget, time left); `final` phases may use the reserve too."""
        return min(stage_budget_s, self.remaining_s() if final else self.work_remaining_s())

    def stage_at(self, stage_budget_s: float, *, after: float | None = None) -> float:
        """The absolute deadline of a stage starting now (or at `after`), never past the work deadline."""
        return min((after if after is not None else time.time()) + stage_budget_s, self.work_at)

    def degrade(self, stage: str) -> None:
        if stage not in self.degraded:
            self.degraded.append(stage)

    def record(self, stage: str, start: float, end: float) -> None:
        """Account a stage that ran from `start` to `end` (epoch seconds)."""
        self.stages_ms[stage] = round(self.stages_ms.get(stage, 0.0) + max(0.0, end - start) * 1000.0, 3)
        s, e = round((start - self.started) * 1000.0, 3), round((end - self.started) * 1000.0, 3)
        span = self.spans_ms.get(stage)
        self.spans_ms[stage] = [min(span[0], s), max(span[1], e)] if span else [s, e]

    @contextmanager
    def measure(self, stage: str) -> Iterator[None]:
        start = time.time()
        try:
            yield
        finally:
            self.record(stage, start, time.time())

    @asynccontextmanager
    async def phase(self, stage: str, budget_s: float, *, final: bool = False) -> AsyncIterator[None]:
        """Run the block for at most min(stage budget, time left), timed as `stage`; StageTimeout when it runs out."""
        timeout = self.timeout_for(budget_s, final=final)
        start = time.time()
        try:
            if timeout <= 0:
                raise StageTimeout(stage, 0.0)
            token = _PHASE_ENDS.set(time.monotonic() + timeout)
            try:
                async with asyncio.timeout(timeout):
                    yield
            finally:
                _PHASE_ENDS.reset(token)
        except TimeoutError as exc:
            raise StageTimeout(stage, timeout) from exc
        finally:
            self.record(stage, start, time.time())

    async def run(self, stage: str, budget_s: float, call: Callable[[], Awaitable[T]], *, final: bool = False) -> T:
        """Await `call()` for at most min(budget, time left); on expiry the call is cancelled and StageTimeout
        raised."""
        async with self.phase(stage, budget_s, final=final):
            return await call()
