"""The login-flood benchmark's report and figure from a made-up run (the run itself needs the served app)."""

from __future__ import annotations

from benchmarks.login_flood import plot, report


def _result() -> dict:
    blocks = [
        {"flood": False, "from_s": 0.0, "to_s": 2.0, "turn_ms": [20.0, 22.0, 21.0]},
        {"flood": True, "from_s": 3.0, "to_s": 5.0, "turn_ms": [24.0, 26.0, 25.0]},
    ]
    return {
        "idle_turn_ms": {"p50": 21.0, "p95": 22.0, "n": 3},
        "flood_turn_ms": {"p50": 25.0, "p95": 26.0, "n": 3},
        "p50_ratio": 1.19,
        "blocks": [{"flood": b["flood"], "from_s": b["from_s"], "to_s": b["to_s"], "p50": 21.0} for b in blocks],
        "logins": {"sent": 4, "by_status": {"401": 1, "429": 3}, "per_s": 1.3, "first_429_after": 1},
        "raw": {"blocks": blocks, "logins": [(3.1, 401), (3.2, 429), (3.3, 429), (4.0, 429)]},
        "flooders": 8,
        "machine": {"cores": 2, "platform": "x", "loadavg_1m": 1.0},
        "git_commit": "0123456789abcdef",
    }


def test_the_report_states_both_p50s_their_ratio_and_the_logins_statuses(tmp_path):
    text = report(_result())
    assert "| idle | 21.0 |" in text and "| during the flood | 25.0 |" in text
    assert "**1.19**" in text and "'429': 3" in text
    plot(_result(), tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
