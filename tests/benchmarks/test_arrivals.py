"""Arrival processes: counts match the rate (ramp included), gamma is burstier than Poisson, seeds reproduce."""

from __future__ import annotations

import statistics

import pytest

from benchmarks.arrivals import arrival_times, expected_count


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


@pytest.mark.parametrize("process,cv", [("poisson", 1.0), ("gamma", 2.0), ("gamma", 0.5)])
def test_mean_rate_and_burstiness(process, cv):
    times = arrival_times(rate=20, duration_s=500, process=process, cv=cv, seed=3)
    assert abs(len(times) - 10_000) < 400
    gaps = _gaps(times)
    assert statistics.fmean(gaps) == pytest.approx(0.05, rel=0.05)
    assert statistics.stdev(gaps) / statistics.fmean(gaps) == pytest.approx(cv, rel=0.1)


def test_times_are_sorted_inside_the_window_and_reproducible():
    a = arrival_times(rate=50, duration_s=10, ramp_up_s=4, seed=11)
    assert a == sorted(a) and 0 < a[0] and a[-1] <= 10
    assert a == arrival_times(rate=50, duration_s=10, ramp_up_s=4, seed=11)
    assert a != arrival_times(rate=50, duration_s=10, ramp_up_s=4, seed=12)


def test_ramp_up_sends_fewer_early_and_the_full_rate_after():
    times = arrival_times(rate=100, duration_s=60, ramp_up_s=20, seed=5)
    first, last = sum(t < 10 for t in times), sum(t >= 50 for t in times)
    assert first == pytest.approx(250, rel=0.2)  # ∫₀¹⁰ 100·t/20 dt
    assert last == pytest.approx(1000, rel=0.1)
    assert len(times) == pytest.approx(expected_count(rate=100, duration_s=60, ramp_up_s=20), rel=0.05)


def test_no_rate_no_arrivals():
    assert arrival_times(rate=0, duration_s=10) == []
