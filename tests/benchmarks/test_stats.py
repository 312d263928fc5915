"""Percentiles and spreads behave as documented (nearest rank; median with min/max/IQR)."""

from __future__ import annotations

import pytest

from benchmarks.stats import distribution, percentile, spread


def test_nearest_rank_percentiles():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100
    assert percentile([7.0], 99) == 7.0
    assert percentile([3, 1, 2], 50) == 2


def test_percentile_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        percentile([], 50)


def test_distribution_fields_and_order():
    d = distribution([5.0, 1.0, 3.0, 100.0])
    assert set(d) == {"n", "p50", "p90", "p95", "p99", "max", "mean"}
    assert d["p50"] <= d["p90"] <= d["p95"] <= d["p99"] <= d["max"] == 100.0
    assert distribution([]) is None


def test_spread_is_median_with_range():
    s = spread([1.2, 0.8, 1.0, 3.0])
    assert s["median"] == pytest.approx(1.1) and s["min"] == 0.8 and s["max"] == 3.0
    assert s["q1"] <= s["median"] <= s["q3"]
    assert spread([2.0])["median"] == 2.0 and spread([]) is None
