"""`python -m benchmarks --quick` against the session's running Baton: a complete, finite, well-formed report."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.__main__ import SCENARIOS, run_scenario
from benchmarks.report import non_finite
from benchmarks.schema import Result

MODEL_STAGES = ("classifier", "detector", "retriever")


def test_quick_run_writes_a_complete_report(serve_app, tmp_path: Path):
    result, out = run_scenario(SCENARIOS / "default.yaml", out=tmp_path, urls={"baton": serve_app["url"]}, quick=True)

    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    report = Result.model_validate(written)
    assert non_finite(written) == []
    assert report.mode == "quick" and list(report.levels) == ["baton"] and report.git_commit
    assert report.machine.cores >= 1 and report.systems["baton"]["started_here"] is False

    (level,) = report.levels["baton"].values()
    assert level.ok >= 50, level.status_counts
    assert level.lost == 0 and level.server_errors_not_503 == 0
    assert level.client_wall_ms.p50 > 0 and level.server_total_ms.p50 > 0
    assert {"keyword", "fusion", *MODEL_STAGES} <= set(level.stages_ms)
    for stage, dist in level.stages_ms.items():
        assert dist is not None and dist.max > 0, stage
    for stage in MODEL_STAGES:
        assert level.stages_ms[stage].p50 > 0, stage
    assert set(level.by_kind) >= {"single_intent", "slot_filling"}

    assert (out / "report.md").read_text(encoding="utf-8").startswith("# Benchmark `default` (quick)")
    for figure in report.figures:
        assert (out / figure).stat().st_size > 1000, figure
    assert list((out / "raw").glob("baton-*.jsonl"))
