"""Open-loop arrival times: Poisson or gamma inter-arrivals at a target rate, with a linear ramp-up."""

from __future__ import annotations

import math
import random


def _gap(rng: random.Random, rate: float, process: str, cv: float) -> float:
    if process == "poisson":
        return rng.expovariate(rate)
    # gamma with mean 1/rate and the given coefficient of variation: shape = 1/cv², scale = cv²/rate
    shape = 1.0 / (cv * cv)
    return rng.gammavariate(shape, 1.0 / (shape * rate))


def arrival_times(
    *, rate: float, duration_s: float, ramp_up_s: float = 0.0, process: str = "poisson", cv: float = 1.0, seed: int = 0
) -> list[float]:
    """Send times (s from start) over `duration_s` whose rate rises linearly from 0 to `rate` during `ramp_up_s`.

    The ramp is a time change: arrivals are drawn at a unit-rate process in "operational time"
    Λ(t) = ∫ rate(u) du and mapped back, so the ramp has exactly the intended mean count.
    """
    if rate <= 0 or duration_s <= 0:
        return []
    rng = random.Random(seed)
    total = rate * (duration_s - ramp_up_s / 2.0) if duration_s >= ramp_up_s else rate * duration_s**2 / (2 * ramp_up_s)
    times, lam = [], 0.0
    while True:
        lam += _gap(rng, 1.0, process, cv)
        if lam > total:
            return times
        times.append(_inverse_cumulative(lam, rate, ramp_up_s))


def _inverse_cumulative(lam: float, rate: float, ramp_up_s: float) -> float:
    ramp_area = rate * ramp_up_s / 2.0
    if ramp_up_s > 0 and lam <= ramp_area:
        return math.sqrt(2.0 * lam * ramp_up_s / rate)
    return ramp_up_s + (lam - ramp_area) / rate


def expected_count(*, rate: float, duration_s: float, ramp_up_s: float = 0.0) -> float:
    return rate * (duration_s - ramp_up_s / 2.0)
