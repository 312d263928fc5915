"""Order statistics used by the reports: nearest-rank percentiles, distribution summaries, median with spread."""

from __future__ import annotations

import math
import statistics

QUANTILES = (50, 90, 95, 99)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (the smallest value with at least q% of the samples at or below it)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def distribution(values: list[float]) -> dict[str, float | int] | None:
    """{"n", "p50", "p90", "p95", "p99", "max", "mean"} in the values' unit, or None when there are none."""
    if not values:
        return None
    out: dict[str, float | int] = {"n": len(values)}
    out.update({f"p{q}": round(percentile(values, q), 3) for q in QUANTILES})
    out["max"] = round(max(values), 3)
    out["mean"] = round(statistics.fmean(values), 3)
    return out


def spread(values: list[float]) -> dict[str, float | int] | None:
    """Median of paired ratios with min, max and the inter-quartile range."""
    if not values:
        return None
    ordered = sorted(values)
    q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else (ordered[0],) * 3
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 3),
        "min": round(ordered[0], 3),
        "max": round(ordered[-1], 3),
        "q1": round(q1, 3),
        "q3": round(q3, 3),
    }
