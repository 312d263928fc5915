"""A turn's absolute deadline and the bounded, cancellable stage call built on it."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


class StageTimeout(Exception):
    def __init__(self, stage: str, timeout_s: float) -> None:
        super().__init__(f"{stage} exceeded {timeout_s * 1000:.0f} ms")
        self.stage = stage


@dataclass
class Deadline:
    """Absolute wall-clock deadline (epoch seconds) plus the per-stage timings a turn collects."""

    budget_ms: float
    started: float = field(default_factory=time.time)
    stages_ms: dict[str, float] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)

    @property
    def at(self) -> float:
        return self.started + self.budget_ms / 1000.0

    def remaining_s(self) -> float:
        return max(0.0, self.at - time.time())

    def elapsed_ms(self) -> float:
        return (time.time() - self.started) * 1000.0

    def timeout_for(self, stage_budget_s: float) -> float:
        return min(stage_budget_s, self.remaining_s())

    def degrade(self, stage: str) -> None:
        if stage not in self.degraded:
            self.degraded.append(stage)

    async def run(self, stage: str, budget_s: float, call: Callable[[], Awaitable[T]]) -> T:
        """Await `call()` for at most min(budget, time left); on expiry the call is cancelled and StageTimeout raised."""
        timeout = self.timeout_for(budget_s)
        t0 = time.perf_counter()
        try:
            if timeout <= 0:
                raise StageTimeout(stage, 0.0)
            return await asyncio.wait_for(call(), timeout)
        except asyncio.TimeoutError as exc:
            raise StageTimeout(stage, timeout) from exc
        finally:
            self.stages_ms[stage] = round((time.perf_counter() - t0) * 1000.0, 3)
