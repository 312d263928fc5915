"""The calendar sync benchmark's report and plot from its committed results."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.calendar_sync import OUT, plot, report


def test_the_committed_results_render(tmp_path: Path) -> None:
    result = json.loads((OUT / "results.json").read_text(encoding="utf-8"))
    text = report(result)
    assert f"| first sync (full listing) | {result['first_sync']['seconds']} |" in text
    assert f"| idle | {result['store_read_ms']['idle']['p50']} |" in text
    assert result["first_sync"]["report"]["entries_changed"] == result["events"]
    plot(result, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 10_000
