"""The WebSocket benchmark's report: the ratios, the per-event table and the figure from one result."""

from __future__ import annotations

from benchmarks.conversation_ws_report import figure, markdown


def dist(p50: float, p99: float, n: int = 10) -> dict:
    return {"n": n, "p50": p50, "p90": p99, "p95": p99, "p99": p99, "max": p99, "mean": p50}


def result() -> dict:
    events = {
        "dialogue.decision": dist(60, 90),
        "write.confirmation_required": dist(70, 100),
        "write.applied": dist(8, 20),
        "execution.result": dist(55, 80),
    }
    return {
        "idle": {
            "http_chat_ms": dist(50, 70),
            "ws_events_ms": {"dialogue.decision": dist(52, 72), "write.confirmation_required": dist(61, 83)},
        },
        "closed_loop": [
            {"connections": 1, "frames_per_s": 30.0, "errors": 0, "events_ms": events},
            {"connections": 4, "frames_per_s": 55.5, "errors": 1, "events_ms": events},
        ],
        "ratios": {"ws_decision_over_http_p50": 1.04, "ws_confirmation_over_http_p50": 1.22},
        "budget_ms": 600.0,
        "database": "embedded",
        "machine": {"cores": 2, "loadavg_1m": 1.5},
        "git_commit": "0123456789abcdef",
    }


def test_the_report_names_the_ratios_and_every_level():
    text = markdown(result())
    assert "**1.04**" in text and "**1.22**" in text
    assert "| 4 | 55.5 | 0 | 1 | 60 / 90 | 70 / 100 | 8 / 20 | 55 / 80 |" in text
    assert "| HTTP /api/v1/agent/chat | reply (perception only) | 50 | 70 | 10 |" in text


def test_the_figure_is_written(tmp_path):
    path = figure(result(), tmp_path)
    assert path.exists() and path.stat().st_size > 10_000
