"""Report maths on hand-made samples: goodput counts 200s within budget, degraded apart; capacity; ratios; finiteness."""
from __future__ import annotations

import math

from benchmarks.driver import LOST, Sample, Window
from benchmarks.report import capacity, non_finite, ratios, summarize, window_summary


def _s(status: int, wall: float, *, degraded: list[str] | None = None, warmup: bool = False, t: float = 1.0) -> Sample:
    ok = status == 200
    return Sample(kind="single_intent", turn=0, endpoint="chat", t_send=t, wall_ms=wall, status=status, warmup=warmup,
                  retry_after="1" if status == 503 else None, server_total_ms=wall - 5 if ok else None,
                  stages={"classifier": 20.0, "keyword": 0.1} if ok else {}, degraded=degraded or [])


def test_goodput_counts_answers_within_budget_and_reports_degraded_apart():
    samples = [_s(200, 100), _s(200, 500, degraded=["classifier"]), _s(200, 900), _s(503, 3), _s(LOST, 30000)]
    s = summarize(samples, duration_s=10, budget_ms=600)
    assert (s["sent"], s["ok"], s["good"], s["good_degraded"], s["shed"], s["lost"]) == (5, 3, 2, 1, 1, 1)
    assert s["goodput_share"] == 0.4 and s["goodput_rps"] == 0.2 and s["throughput_rps"] == 0.3
    assert s["status_counts"] == {"0": 1, "200": 3, "503": 1}
    assert s["degraded_stages"] == {"classifier": 1}
    assert s["client_wall_ms"]["max"] == 900 and s["stages_ms"]["classifier"]["p50"] == 20.0
    assert s["shed_without_retry_after"] == 0 and s["server_errors_not_503"] == 0


def test_500_and_shed_without_retry_after_are_counted():
    bare = _s(503, 2)
    bare.retry_after = None
    s = summarize([bare, _s(500, 10)], duration_s=1, budget_ms=600)
    assert s["shed_without_retry_after"] == 1 and s["server_errors_not_503"] == 1


def test_window_summary_drops_warmup():
    window = Window(level=5, process="poisson", samples=[_s(200, 50, warmup=True), _s(200, 60)], wall_s=10, cpu_s=1,
                    loadavg_1m=1.0, abandoned_turns=0, sent_conversations=2)
    s = window_summary(window, duration_s=5, budget_ms=600)
    assert s["sent"] == 1 and s["client"]["cpu_share"] == 0.1


def test_capacity_is_the_highest_level_that_meets_the_target():
    levels = {4: {"goodput_share": 0.98}, 8: {"goodput_share": 0.995}, 12: {"goodput_share": 0.9}, 16: {"goodput_share": 0.97}}
    assert capacity(levels, 0.99) == 8
    assert capacity({4: {"goodput_share": 0.5}}, 0.99) is None


def test_ratios_pair_same_level_and_round_only_under_target():
    def run(system, level, rnd, p50, share=1.0):
        dist = {"p50": p50, "p99": p50 * 2}
        return {"system": system, "level": level, "round": rnd,
                "summary": {"client_wall_ms": dist, "goodput_share": share, "goodput_rps": level * share}}
    runs = [run("a", 4, 0, 10), run("b", 4, 0, 20), run("a", 4, 1, 30), run("b", 4, 1, 20),
            run("a", 8, 0, 10, share=0.5), run("b", 8, 0, 20)]
    r = ratios(runs, "a", "b", target=0.99)
    assert r["client_p50"]["n"] == 2 and r["client_p50"]["min"] == 0.5 and r["client_p50"]["max"] == 1.5
    assert r["goodput_rps"]["n"] == 3


def test_non_finite_finds_nan_and_inf_paths():
    assert non_finite({"a": [1, 2.5, None, True], "b": {"c": "x"}}) == []
    assert non_finite({"a": [1, math.nan], "b": {"c": math.inf}}) == [".a[1]", ".b.c"]
