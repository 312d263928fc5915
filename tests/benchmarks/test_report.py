"""Report maths on hand-made samples: goodput counts 200s within budget, degraded apart; capacity; ratios;
finiteness."""

from __future__ import annotations

import math

from benchmarks.driver import LOST, Sample, Window
from benchmarks.report import burst_summary, capacity, derive, non_finite, ratios, summarize, window_summary


def _s(status: int, wall: float, *, degraded: list[str] | None = None, warmup: bool = False, t: float = 1.0) -> Sample:
    ok = status == 200
    return Sample(
        kind="single_intent",
        turn=0,
        endpoint="chat",
        t_send=t,
        wall_ms=wall,
        status=status,
        warmup=warmup,
        retry_after="1" if status == 503 else None,
        server_total_ms=wall - 5 if ok else None,
        stages={"classifier": 20.0, "keyword": 0.1} if ok else {},
        degraded=degraded or [],
    )


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
    window = Window(
        level=5,
        process="poisson",
        samples=[_s(200, 50, warmup=True), _s(200, 60)],
        wall_s=10,
        cpu_s=1,
        loadavg_1m=1.0,
        abandoned_turns=0,
        sent_conversations=2,
    )
    s = window_summary(window, duration_s=5, budget_ms=600)
    assert s["sent"] == 1 and s["client"]["cpu_share"] == 0.1


def test_capacity_is_the_highest_level_that_meets_the_target():
    levels = {
        4: {"goodput_share": 0.98},
        8: {"goodput_share": 0.995},
        12: {"goodput_share": 0.9},
        16: {"goodput_share": 0.97},
    }
    assert capacity(levels, 0.99) == 8
    assert capacity({4: {"goodput_share": 0.5}}, 0.99) is None


def test_ratios_pair_same_level_and_round_only_under_target():
    def run(system, level, rnd, p50, share=1.0):
        dist = {"p50": p50, "p99": p50 * 2}
        return {
            "system": system,
            "level": level,
            "round": rnd,
            "summary": {"client_wall_ms": dist, "goodput_share": share, "goodput_rps": level * share},
        }

    runs = [
        run("a", 4, 0, 10),
        run("b", 4, 0, 20),
        run("a", 4, 1, 30),
        run("b", 4, 1, 20),
        run("a", 8, 0, 10, share=0.5),
        run("b", 8, 0, 20),
    ]
    r = ratios(runs, "a", "b", target=0.99)
    assert r["client_p50"]["n"] == 2 and r["client_p50"]["min"] == 0.5 and r["client_p50"]["max"] == 1.5
    assert r["goodput_rps"]["n"] == 3


def test_non_finite_finds_nan_and_inf_paths():
    assert non_finite({"a": [1, 2.5, None, True], "b": {"c": "x"}}) == []
    assert non_finite({"a": [1, math.nan], "b": {"c": math.inf}}) == [".a[1]", ".b.c"]


def test_clean_goodput_rps_counts_only_undegraded_answers_in_budget():
    samples = [_s(200, 100), _s(200, 200), _s(200, 300, degraded=["retriever"]), _s(200, 900), _s(503, 3)]
    s = summarize(samples, duration_s=2, budget_ms=600)
    assert s["goodput_rps"] == 1.5 and s["clean_goodput_rps"] == 1.0 and s["clean_goodput_share"] == 0.4


def test_burst_reports_the_share_of_accepted_turns_inside_the_budget():
    samples = [_s(200, 100), _s(200, 500), _s(200, 700), _s(200, 2000), _s(503, 2), _s(503, 2), _s(LOST, 30000)]
    window = Window(
        level=50,
        process="poisson",
        samples=samples,
        wall_s=10,
        cpu_s=2,
        loadavg_1m=3.0,
        abandoned_turns=0,
        sent_conversations=7,
    )
    b = burst_summary(window, capacity_rps=4, offered_rps=40, duration_s=5, budget_ms=600, recovery=[200, 200, 503])
    assert (b["ok"], b["good"], b["shed"], b["lost"]) == (4, 2, 2, 1)
    assert b["accepted_in_budget_share"] == 0.5
    assert b["accepted_over_capacity"] == round(0.8 / 4, 3) and b["max_wall_ms"] == 30000
    assert b["recovery_statuses"] == {"200": 2, "503": 1}
    none = burst_summary(
        Window(
            level=50,
            process="poisson",
            samples=[_s(503, 1)],
            wall_s=1,
            cpu_s=0,
            loadavg_1m=0,
            abandoned_turns=0,
            sent_conversations=1,
        ),
        capacity_rps=None,
        offered_rps=40,
        duration_s=1,
        budget_ms=600,
        recovery=[],
    )
    assert none["accepted_in_budget_share"] is None and none["accepted_over_capacity"] is None


def _level(goodput_share: float, clean_share: float, clean_rps: float, p50: float = 100.0) -> dict:
    return {
        "goodput_share": goodput_share,
        "clean_goodput_share": clean_share,
        "clean_goodput_rps": clean_rps,
        "goodput_rps": clean_rps,
        "client_wall_ms": {"p50": p50, "p99": 2 * p50},
    }


def test_derive_adds_open_loop_capacity_best_clean_goodput_and_comparisons():
    main = {
        "a": {"4.0": _level(1, 1, 10), "16.0": _level(0.9, 0.5, 14)},
        "b": {"4.0": _level(1, 1, 7), "16.0": _level(1, 0.2, 3)},
    }
    open_levels = {
        "a": {"4.0": _level(1, 1, 4), "8.0": _level(0.995, 0.9, 7)},
        "b": {"4.0": _level(0.995, 0.995, 4), "8.0": _level(0.5, 0.5, 4)},
    }
    runs = [{"system": n, "level": float(k), "round": 0, "summary": v} for n, lv in main.items() for k, v in lv.items()]
    open_runs = [
        {"system": n, "level": float(k), "round": 0, "summary": v}
        for n, lv in open_levels.items()
        for k, v in lv.items()
    ]
    result = {
        "scenario": {"slo": {"goodput_target": 0.99}},
        "levels": main,
        "runs": runs,
        "systems": {"a": {"kind": "baton"}, "b": {"kind": "monolith"}},
        "open_loop": {"runs": open_runs, "levels": open_levels},
        "encoder_alone": {"pooled": {"batch1_p50_ms": 20.0, "ceiling_turns_per_s": 70.0}},
        "idle": {"systems": {"a": {"client_wall_ms": {"p50": 50.0}}, "b": {"client_wall_ms": {"p50": 30.0}}}},
    }
    d = derive(result)
    assert d["capacity_at_slo"] == {"a": 4.0, "b": 16.0}
    assert d["best_clean_goodput"] == {"a": {"rps": 14, "level": 16.0}, "b": {"rps": 7, "level": 4.0}}
    assert d["open_loop_capacity_at_slo"] == {"a": 8.0, "b": 4.0}
    assert d["open_loop_capacity_at_slo_clean"] == {"a": 4.0, "b": 4.0}
    assert [r["pair"] for r in d["open_loop_ratios"]] == ["a/b"]
    a = d["comparisons"]["systems"]["a"]
    assert a["idle_over_encoder_batch1"] == 2.5 and a["clean_goodput_over_ceiling"] == 0.2
    assert a["clean_goodput_over_monolith"] == 2.0 and d["comparisons"]["monolith"] == "b"
    assert d["comparisons"]["systems"]["b"]["clean_goodput_over_monolith"] == 1.0


def test_derive_without_open_loop_leaves_its_keys_out():
    result = {
        "scenario": {"slo": {"goodput_target": 0.99}},
        "levels": {"a": {"4.0": _level(1, 1, 3)}},
        "runs": [{"system": "a", "level": 4.0, "round": 0, "summary": _level(1, 1, 3)}],
        "systems": {"a": {"kind": "baton"}},
    }
    d = derive(result)
    assert "open_loop_capacity_at_slo" not in d
    assert d["comparisons"]["systems"]["a"]["idle_over_encoder_batch1"] is None
    assert d["comparisons"]["monolith"] is None
