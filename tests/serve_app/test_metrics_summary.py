"""The live metrics summary (no Ray): windowed counts and rates, percentiles from the histogram's buckets, the scope,
and the sum over several replicas' samples."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry

from protocol.http_chat import ChatResponse, TurnStatus
from protocol.turn_debug import Timings
from serve_app.metrics import LATENCY_BUCKETS_MS, TurnMetrics
from serve_app.metrics_summary import LiveSummary, Sample, quantile, read_sample, summarize


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def turn(total_ms: float, status: TurnStatus = TurnStatus.completed, degraded: tuple[str, ...] = ()) -> ChatResponse:
    return ChatResponse(
        session_id="s",
        reply="好的",
        status=status,
        timings=Timings(stages={"encoder": 10.0}, total_ms=total_ms, budget_ms=600.0, degraded=list(degraded)),
    )


def test_quantiles_interpolate_inside_their_bucket_like_histogram_quantile():
    buckets = ((10.0, 0.0), (20.0, 10.0), (40.0, 20.0), (math.inf, 20.0))
    assert quantile(0.5, buckets) == pytest.approx(20.0)
    assert quantile(0.25, buckets) == pytest.approx(15.0)
    assert quantile(0.99, buckets) == pytest.approx(20.0 + 20.0 * 9.8 / 10.0)
    assert quantile(0.5, ((10.0, 0.0), (math.inf, 0.0))) is None
    assert quantile(0.5, ()) is None


def test_a_quantile_past_the_last_bucket_is_the_last_finite_bound():
    assert quantile(0.99, ((100.0, 1.0), (2000.0, 1.0), (math.inf, 10.0))) == 2000.0


def test_the_summary_counts_only_the_window_and_says_how_long_it_is():
    clock = Clock()
    metrics = TurnMetrics(CollectorRegistry())
    for _ in range(4):
        metrics.observe(turn(30.0))  # before the window: since_start only
    live = LiveSummary(metrics.registry.collect, scope="process", window_s=30.0, clock=clock)
    clock.now += 10.0
    for ms in (30.0, 30.0, 50.0, 500.0):
        metrics.observe(turn(ms))
    metrics.observe(turn(70.0, TurnStatus.clarify, degraded=("classifier", "detector")))
    metrics.shed.inc(3)
    metrics.errors.labels("overloaded").inc(3)
    summary = live.summary()
    assert summary.scope == "process" and summary.window_s == 10.0
    assert summary.turns == 5 and summary.turns_per_s == 0.5
    assert summary.by_status == {"clarify": 1, "completed": 4}
    assert summary.shed == 3 and summary.errors == {"overloaded": 3}
    assert summary.degraded == {"classifier": 1, "detector": 1}
    assert 20.0 < summary.p50_ms <= 60.0 and 400.0 < summary.p99_ms <= 600.0
    assert summary.latency_cap_ms == LATENCY_BUCKETS_MS[-1]
    assert (summary.since_start.turns, summary.since_start.shed, summary.since_start.degraded) == (9, 3, 2)


def test_the_window_slides_old_reads_fall_out_and_an_idle_window_has_no_percentiles():
    clock = Clock()
    metrics = TurnMetrics(CollectorRegistry())
    live = LiveSummary(metrics.registry.collect, scope="process", window_s=30.0, clock=clock)
    metrics.observe(turn(30.0))
    clock.now += 5.0
    assert live.summary().turns == 1
    clock.now += 40.0  # the read at +5 s is now older than the window: it becomes the baseline
    first = live.summary()
    assert first.window_s == 40.0 and first.turns == 0 and first.turns_per_s == 0.0
    assert first.p50_ms is None and first.p99_ms is None
    metrics.observe(turn(30.0))
    clock.now += 31.0
    later = live.summary()
    assert later.turns == 1 and later.window_s == 31.0 and later.since_start.turns == 2


def test_reads_kept_at_most_once_a_second_however_often_it_is_polled():
    clock = Clock()
    metrics = TurnMetrics(CollectorRegistry())
    live = LiveSummary(metrics.registry.collect, scope="process", window_s=30.0, clock=clock)
    for _ in range(1000):
        clock.now += 0.01
        live.summary()
    assert len(live._past) <= 11


def test_samples_of_several_replicas_add_up():
    """What a multiprocess collector hands over for two replicas: one family, each replica's samples in it."""
    a, b = TurnMetrics(CollectorRegistry()), TurnMetrics(CollectorRegistry())
    a.observe(turn(30.0))
    b.observe(turn(30.0))
    b.observe(turn(700.0, degraded=("planner",)))
    b.shed.inc()
    merged = read_sample([*a.registry.collect(), *b.registry.collect()], at=0.0)
    assert merged.turns == {"completed": 3.0} and merged.shed == 1.0 and merged.degraded == {"planner": 1.0}
    assert dict(merged.buckets)[math.inf] == 3.0
    summary = summarize(merged, Sample(at=-10.0), scope="all_replicas")
    assert summary.turns == 3 and summary.turns_per_s == 0.3 and summary.scope == "all_replicas"


def test_the_first_read_has_an_empty_window():
    now = read_sample(TurnMetrics(CollectorRegistry()).registry.collect(), at=5.0)
    summary = summarize(now, None, scope="process")
    assert summary.window_s == 0.0 and summary.turns == 0 and summary.turns_per_s is None and summary.p50_ms is None


REPLICA = """
from protocol.http_chat import ChatResponse
from protocol.turn_debug import Timings
from serve_app.metrics import TurnMetrics
metrics = TurnMetrics()
for ms in {latencies}:
    metrics.observe(
        ChatResponse(session_id="s", reply="r", status="completed", timings=Timings(total_ms=ms, degraded={degraded}))
    )
metrics.shed.inc({shed})
"""


def test_in_a_multiprocess_directory_the_summary_is_the_sum_over_every_replica(tmp_path):
    """Two processes write their samples as the replicas of a run do; a third reads the sum."""
    import subprocess
    import sys

    from tests.support.packs import ROOT

    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    reader = TurnMetrics(CollectorRegistry(), multiproc_dir=str(tmp_path))
    assert reader.live.scope == "all_replicas"
    for latencies, degraded, shed in (([30.0, 30.0], [], 1), ([50.0, 900.0], ["planner"], 2)):
        code = REPLICA.format(latencies=latencies, degraded=degraded, shed=shed)
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=60)
    summary = reader.live.summary()
    assert summary.turns == 4 and summary.shed == 3 and summary.degraded == {"planner": 2}
    assert summary.since_start.turns == 4 and 20.0 < summary.p50_ms <= 60.0 and summary.p99_ms > 800.0
