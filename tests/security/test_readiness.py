"""Readiness that cannot hang (issue 34, item 16): the session's app starts with the classifier slower than its budget
(tests/support/served.py, SLOW_START_FAULT) and must serve within its start timeout, saying it runs degraded, its
turns answered inside their budget."""

from __future__ import annotations

import pytest

from tests.support.served import ServedApp

pytestmark = pytest.mark.ray


def test_a_slow_stage_at_start_still_turns_health_green_within_the_start_timeout(served: ServedApp):
    start = served.slow_start
    print(f"started with {start['fault']}: green after {start['green_after_s']:.0f} s, /health {start['health']}")
    assert start["fault"].startswith("classifier:")
    assert start["green_after_s"] < start["timeout_s"]
    assert start["health"]["status"] == "ok"
    assert "degraded" in start["health"]["reason_when_green"], start["health"]


def test_a_text_turn_under_the_slow_stage_answers_inside_its_budget_degraded(served: ServedApp):
    turn = served.slow_start["text"]
    assert turn["status_code"] == 200, turn
    timings = turn["timings"]
    print(
        f"first text turn: {turn['wall_ms']:.0f} ms (budget {timings['budget_ms']:.0f}), degraded {timings['degraded']}"
    )
    assert timings["degraded"], timings
    assert timings["total_ms"] <= timings["budget_ms"], timings
