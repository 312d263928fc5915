"""The turns-during-a-sync benchmark: its report and plot from its committed results, and the calendars it places."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.calendar_turns import OUT, plot, report


def test_the_committed_results_render(tmp_path: Path) -> None:
    result = json.loads((OUT / "results.json").read_text(encoding="utf-8"))
    text = report(result)
    assert f"| idle | {result['idle_turn_ms']['p50']} |" in text
    assert f"| during a first sync | {result['sync_turn_ms']['p50']} |" in text
    assert f"**{result['p50_ratio']}**" in text
    assert all(s["entries"] >= result["events"] for s in result["syncs"])  # every event arrived in each block
    sync_turns = [s for b in result["raw"]["blocks"] if b["sync"] for s in b["turn_ms"]]
    assert len(sync_turns) == result["sync_turn_ms"]["n"] > 0
    plot(result, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 10_000
