"""The live summary of served turns: turns/s, p50/p99, sheds and degradations over a sliding window.

It reads the same Prometheus samples the metrics listener exposes. In the served app every replica of the run writes
its samples to one multiprocess directory, so the summary is the sum over all orchestrator replicas and any replica
answers the same counts; without that directory (the in-process monolith) it is the process's own. Each replica keeps
a few of its past reads and answers the difference between now and the newest read at least `window_s` old (or its
oldest), so the window it states is the one it measured. Percentiles are estimated from the latency histogram's
buckets, linearly inside a bucket as Prometheus' `histogram_quantile` does: they are as fine as the buckets.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from prometheus_client.metrics_core import Metric

from protocol.metrics import MetricsSummary, MetricsTotals

TURNS, LATENCY, SHED, DEGRADED, ERRORS = (
    "baton_turns_total",
    "baton_turn_latency_ms",
    "baton_shed_turns_total",
    "baton_degraded_stages_total",
    "baton_errors_total",
)
KEEP_EVERY_S = 1.0  # past reads kept at most once a second: memory stays bounded however often the page polls


@dataclass(frozen=True)
class Sample:
    """Cumulative counts read at `at` (seconds, monotonic)."""

    at: float
    turns: dict[str, float] = field(default_factory=dict)
    buckets: tuple[tuple[float, float], ...] = ()  # (upper bound ms, cumulative count), ascending, +inf last
    shed: float = 0.0
    degraded: dict[str, float] = field(default_factory=dict)
    errors: dict[str, float] = field(default_factory=dict)


def read_sample(metrics: Iterable[Metric], at: float) -> Sample:
    """The counts out of collected metric families (a registry's or a multiprocess collector's)."""
    turns: dict[str, float] = {}
    degraded: dict[str, float] = {}
    errors: dict[str, float] = {}
    buckets: dict[float, float] = {}
    shed = 0.0
    for family in metrics:
        for s in family.samples:
            if s.name == TURNS:
                turns[s.labels["status"]] = turns.get(s.labels["status"], 0.0) + s.value
            elif s.name == LATENCY + "_bucket":
                bound = float(s.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + s.value
            elif s.name == SHED:
                shed += s.value
            elif s.name == DEGRADED:
                degraded[s.labels["stage"]] = degraded.get(s.labels["stage"], 0.0) + s.value
            elif s.name == ERRORS:
                errors[s.labels["code"]] = errors.get(s.labels["code"], 0.0) + s.value
    return Sample(
        at=at, turns=turns, buckets=tuple(sorted(buckets.items())), shed=shed, degraded=degraded, errors=errors
    )


def quantile(q: float, buckets: tuple[tuple[float, float], ...]) -> float | None:
    """The q-quantile of a cumulative histogram, linear inside its bucket; a quantile in the +Inf bucket is the largest
    finite bound. None when the histogram is empty."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank and count > below:
            if math.isinf(bound):
                return lower
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = (bound if not math.isinf(bound) else lower), count
    return lower


def _delta(now: dict[str, float], before: dict[str, float]) -> dict[str, int]:
    # counters never go down; a negative difference can only be a replica's samples that vanished: count 0
    out = {k: int(round(max(0.0, v - before.get(k, 0.0)))) for k, v in now.items()}
    return {k: v for k, v in sorted(out.items()) if v}


def summarize(now: Sample, before: Sample | None, *, scope: str) -> MetricsSummary:
    """The figures between `before` and `now` (`before` None: nothing yet to compare with, an empty window)."""
    base = before or now
    window_s = max(0.0, now.at - base.at)
    by_status = _delta(now.turns, base.turns)
    turns = sum(by_status.values())
    previous = dict(base.buckets)
    buckets = tuple((bound, max(0.0, count - previous.get(bound, 0.0))) for bound, count in now.buckets)
    finite = [bound for bound, _ in now.buckets if not math.isinf(bound)]
    return MetricsSummary(
        scope=scope,
        window_s=round(window_s, 3),
        turns=turns,
        turns_per_s=round(turns / window_s, 3) if window_s > 0 else None,
        p50_ms=_rounded(quantile(0.5, buckets)),
        p99_ms=_rounded(quantile(0.99, buckets)),
        latency_cap_ms=max(finite, default=0.0),
        shed=int(round(max(0.0, now.shed - base.shed))),
        degraded=_delta(now.degraded, base.degraded),
        by_status=by_status,
        errors=_delta(now.errors, base.errors),
        since_start=MetricsTotals(
            turns=int(round(sum(now.turns.values()))),
            shed=int(round(now.shed)),
            degraded=int(round(sum(now.degraded.values()))),
        ),
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


class LiveSummary:
    """One replica's view: `collect()` reads the metric families, `summary()` answers the last `window_s` seconds.

    The first read happens at construction, so the first summary already covers the time since then."""

    def __init__(
        self,
        collect: Callable[[], Iterable[Metric]],
        *,
        scope: str,
        window_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._collect = collect
        self._clock = clock
        self.scope = scope
        self.window_s = window_s
        self._lock = threading.Lock()  # summaries are read on worker threads (the multiprocess read is file I/O)
        self._past: deque[Sample] = deque([self._read()])

    def _read(self) -> Sample:
        return read_sample(self._collect(), self._clock())

    def summary(self) -> MetricsSummary:
        now = self._read()
        with self._lock:
            while len(self._past) > 1 and self._past[1].at <= now.at - self.window_s:
                self._past.popleft()
            before = self._past[0]
            if now.at - self._past[-1].at >= KEEP_EVERY_S:
                self._past.append(now)
        return summarize(now, before, scope=self.scope)
