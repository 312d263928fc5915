"""Summaries of load windows: latency per stage, throughput, goodput, degradations, status codes, capacity and
ratios."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from benchmarks.comparisons import best_clean_goodput, comparisons
from benchmarks.driver import LOST, Sample, Window
from benchmarks.stats import distribution, spread


def measured(samples: Iterable[Sample]) -> list[Sample]:
    return [s for s in samples if not s.warmup]


def summarize(samples: list[Sample], *, duration_s: float, budget_ms: float) -> dict:
    """One load level's numbers from its measured samples (warm-up already dropped)."""
    ok = [s for s in samples if s.status == 200]
    good = [s for s in ok if s.wall_ms <= budget_ms]
    good_degraded = [s for s in good if s.degraded]
    sent = len(samples)
    stages = sorted({stage for s in ok for stage in s.stages})
    codes = Counter(str(s.status) for s in samples)
    return {
        "sent": sent,
        "offered_rps": round(sent / duration_s, 3),
        "status_counts": dict(sorted(codes.items())),
        "ok": len(ok),
        "throughput_rps": round(len(ok) / duration_s, 3),
        "good": len(good),
        "goodput_share": round(len(good) / sent, 4) if sent else 0.0,
        "goodput_rps": round(len(good) / duration_s, 3),
        "good_degraded": len(good_degraded),
        "clean_goodput_share": round((len(good) - len(good_degraded)) / sent, 4) if sent else 0.0,
        "clean_goodput_rps": round((len(good) - len(good_degraded)) / duration_s, 3),
        "degraded_turns": sum(1 for s in ok if s.degraded),
        "degraded_stages": dict(sorted(Counter(stage for s in ok for stage in s.degraded).items())),
        "shed": codes.get("503", 0) + codes.get("429", 0),
        "shed_without_retry_after": sum(1 for s in samples if s.status in (429, 503) and not s.retry_after),
        "server_errors_not_503": sum(1 for s in samples if s.status >= 500 and s.status != 503),
        "lost": codes.get(str(LOST), 0),
        "client_wall_ms": distribution([s.wall_ms for s in ok]),
        "shed_wall_ms": distribution([s.wall_ms for s in samples if s.status in (429, 503)]),
        "server_total_ms": distribution([s.server_total_ms for s in ok if s.server_total_ms is not None]),
        "stages_ms": {stage: distribution([s.stages[stage] for s in ok if stage in s.stages]) for stage in stages},
        "by_kind": dict(sorted(Counter(s.kind for s in samples).items())),
    }


def window_summary(window: Window, *, duration_s: float, budget_ms: float) -> dict:
    summary = summarize(measured(window.samples), duration_s=duration_s, budget_ms=budget_ms)
    summary["client"] = {"cpu_share": window.client_cpu_share, "loadavg_1m": window.loadavg_1m, "wall_s": window.wall_s}
    summary["abandoned_turns"] = window.abandoned_turns
    return summary


def capacity(levels: dict[float, dict], target: float, key: str = "goodput_share") -> float | None:
    """Highest offered level whose goodput share reaches the target (None when none does).

    A lower level that misses (a noisy neighbour on a shared machine) does not cap it; the per-level table
    shows such misses. key="clean_goodput_share" counts only turns that also ran every stage.
    """
    passing = [level for level, summary in levels.items() if summary[key] >= target]
    return max(passing) if passing else None


def derive(result: dict) -> dict:
    """Everything computed from the stored summaries rather than measured, so --render can recompute it.

    Capacity at SLO (pooled, per round, without degradation) and interleaved ratios of the main sweep; the best
    clean goodput per system; the open loop's capacity and ratios; idle and goodput against the encoder alone and
    the monolith (benchmarks.comparisons).
    """
    target = result["scenario"]["slo"]["goodput_target"]
    levels = _float_levels(result["levels"])
    rounds: dict[str, dict[int, dict[float, dict]]] = {name: {} for name in levels}
    for run in result["runs"]:
        rounds[run["system"]].setdefault(run["round"], {})[run["level"]] = run["summary"]
    names = list(levels)
    derived = {
        "capacity_at_slo": {name: capacity(by_level, target) for name, by_level in levels.items()},
        "capacity_by_round": {
            name: {str(r): capacity(lv, target) for r, lv in by_round.items()} for name, by_round in rounds.items()
        },
        "capacity_at_slo_without_degradation": {
            name: capacity(by_level, target, "clean_goodput_share") for name, by_level in levels.items()
        },
        "ratios": [ratios(result["runs"], a, b, target=target) for i, a in enumerate(names) for b in names[i + 1 :]],
        "best_clean_goodput": {name: best_clean_goodput(by_level) for name, by_level in result["levels"].items()},
    }
    if result.get("open_loop"):
        open_levels = _float_levels(result["open_loop"]["levels"])
        open_names = list(open_levels)
        derived.update(
            {
                "open_loop_capacity_at_slo": {name: capacity(lv, target) for name, lv in open_levels.items()},
                "open_loop_capacity_at_slo_clean": {
                    name: capacity(lv, target, "clean_goodput_share") for name, lv in open_levels.items()
                },
                "open_loop_ratios": [
                    ratios(result["open_loop"]["runs"], a, b, target=target)
                    for i, a in enumerate(open_names)
                    for b in open_names[i + 1 :]
                ],
            }
        )
    derived["comparisons"] = comparisons({**result, **derived})
    return derived


def _float_levels(levels: dict[str, dict[str, dict]]) -> dict[str, dict[float, dict]]:
    return {name: {float(k): v for k, v in by_level.items()} for name, by_level in levels.items()}


def _p(summary: dict, key: str) -> float | None:
    dist = summary.get("client_wall_ms")
    return dist[key] if dist else None


def ratios(runs: list[dict], a: str, b: str, *, target: float) -> dict:
    """a/b for client-wall p50 and p99 over interleaved pairs (same level and round) where both met the goodput
    target."""
    by_key = {(r["system"], r["level"], r["round"]): r["summary"] for r in runs}
    p50, p99, goodput = [], [], []
    for (system, level, rnd), sa in by_key.items():
        sb = by_key.get((b, level, rnd))
        if system != a or sb is None:
            continue
        if sb["goodput_rps"]:
            goodput.append(sa["goodput_rps"] / sb["goodput_rps"])
        if sa["goodput_share"] >= target and sb["goodput_share"] >= target and _p(sa, "p50") and _p(sb, "p50"):
            p50.append(_p(sa, "p50") / _p(sb, "p50"))
            p99.append(_p(sa, "p99") / _p(sb, "p99"))
    return {"pair": f"{a}/{b}", "client_p50": spread(p50), "client_p99": spread(p99), "goodput_rps": spread(goodput)}


def burst_summary(
    window: Window,
    *,
    capacity_rps: float | None,
    offered_rps: float,
    duration_s: float,
    budget_ms: float,
    recovery: list[int],
) -> dict:
    """The burst's numbers: a level summary plus acceptance against capacity, the share of accepted turns answered
    inside the budget, the slowest answer, a per-second timeline and the recovery probe's status codes."""
    samples = measured(window.samples)
    summary = summarize(samples, duration_s=duration_s, budget_ms=budget_ms)
    accepted_rps = summary["throughput_rps"]
    return {
        "offered_rps_target": offered_rps,
        "capacity_at_slo_rps": capacity_rps,
        **summary,
        "accepted_rps": accepted_rps,
        "accepted_in_budget_share": round(summary["good"] / summary["ok"], 4) if summary["ok"] else None,
        "accepted_over_capacity": round(accepted_rps / capacity_rps, 3) if capacity_rps else None,
        "max_wall_ms": round(max((s.wall_ms for s in samples), default=0.0), 1),
        "timeline": timeline(samples),
        "client": {"cpu_share": window.client_cpu_share, "loadavg_1m": window.loadavg_1m, "wall_s": window.wall_s},
        "recovery_statuses": dict(Counter(str(c) for c in recovery)),
    }


def timeline(samples: list[Sample]) -> list[dict]:
    """Per second of send time: sent, accepted (200), good-in-budget, shed."""
    buckets: dict[int, Counter] = {}
    for s in samples:
        c = buckets.setdefault(int(s.t_send), Counter())
        c["sent"] += 1
        c["accepted"] += s.status == 200
        c["shed"] += s.status in (429, 503)
    return [{"t": t, **buckets[t]} for t in sorted(buckets)]


def non_finite(value, path: str = "") -> list[str]:
    """Paths of NaN/inf numbers anywhere in a JSON-like value (the report must hold none)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [] if math.isfinite(value) else [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in non_finite(v, f"{path}.{k}")]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in non_finite(v, f"{path}[{i}]")]
    return []


__all__ = ["summarize", "window_summary", "capacity", "derive", "ratios", "burst_summary", "timeline", "non_finite"]
