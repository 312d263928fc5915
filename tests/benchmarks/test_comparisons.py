"""Headline ratios: best clean goodput per system, older summaries, and ratios that are None without their inputs."""

from __future__ import annotations

from benchmarks.comparisons import best_clean_goodput, clean_goodput_rps, comparisons, ratio


def test_clean_goodput_of_an_older_summary_is_derived_from_its_counts():
    assert clean_goodput_rps({"clean_goodput_rps": 3.5, "good": 1, "good_degraded": 1, "goodput_rps": 9}) == 3.5
    assert clean_goodput_rps({"good": 10, "good_degraded": 4, "goodput_rps": 5.0}) == 3.0
    assert clean_goodput_rps({"good": 0, "good_degraded": 0, "goodput_rps": 0.0}) == 0.0


def test_best_clean_goodput_is_the_highest_level_value_lower_level_on_a_tie():
    levels = {"48.0": {"clean_goodput_rps": 9.0}, "4.0": {"clean_goodput_rps": 9.0}, "16.0": {"clean_goodput_rps": 6.0}}
    assert best_clean_goodput(levels) == {"rps": 9.0, "level": 4.0}
    assert best_clean_goodput({"4": {"clean_goodput_rps": 1.0}, "16": {"clean_goodput_rps": 2.5}}) == {
        "rps": 2.5,
        "level": 16.0,
    }
    assert best_clean_goodput({}) is None


def test_ratio_needs_both_sides_and_a_positive_divisor():
    assert ratio(3, 4) == 0.75
    assert ratio(None, 4) is None and ratio(3, None) is None and ratio(3, 0) is None


def test_comparisons_against_encoder_and_monolith():
    result = {
        "systems": {"fused": {"kind": "baton"}, "noop": {"kind": "baton"}, "mono": {"kind": "monolith"}},
        "encoder_alone": {"pooled": {"batch1_p50_ms": 8.0, "ceiling_turns_per_s": 120.0}},
        "idle": {
            "systems": {
                "fused": {"client_wall_ms": {"p50": 40.0}},
                "mono": {"client_wall_ms": {"p50": 20.0}},
                "noop": {"client_wall_ms": None},
            }
        },
        "best_clean_goodput": {
            "fused": {"rps": 30.0, "level": 16.0},
            "noop": {"rps": 90.0, "level": 48.0},
            "mono": {"rps": 15.0, "level": 4.0},
        },
    }
    c = comparisons(result)
    assert c["monolith"] == "mono" and c["encoder_ceiling_turns_per_s"] == 120.0
    fused, noop, mono = (c["systems"][n] for n in ("fused", "noop", "mono"))
    assert fused["idle_over_encoder_batch1"] == 5.0 and fused["clean_goodput_over_ceiling"] == 0.25
    assert fused["clean_goodput_over_monolith"] == 2.0 and noop["clean_goodput_over_monolith"] == 6.0
    assert mono["clean_goodput_over_monolith"] == 1.0 and mono["idle_over_encoder_batch1"] == 2.5
    assert noop["idle_client_p50_ms"] is None and noop["idle_over_encoder_batch1"] is None
    assert fused["best_clean_goodput_level"] == 16.0 and fused["kind"] == "baton"


def test_comparisons_with_nothing_measured_are_all_none():
    c = comparisons({"systems": {"a": {"kind": "baton"}}})
    assert c["encoder_batch1_p50_ms"] is None and c["monolith"] is None
    assert all(v is None for k, v in c["systems"]["a"].items() if k != "kind")
