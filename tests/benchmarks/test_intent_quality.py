"""The routing-quality report: fresh phrasings scored beside a pack's test split."""
from __future__ import annotations

import json
from difflib import SequenceMatcher
from pathlib import Path

from benchmarks.intent_quality import PHRASINGS, read_rows, report

NEAR = 0.75


def _similar(a: str, b: str) -> bool:
    m = SequenceMatcher(None, a, b)
    return m.real_quick_ratio() >= NEAR and m.quick_ratio() >= NEAR and m.ratio() >= NEAR


def _pack(phrasings: dict | None) -> dict:
    served = {"top1": 0.927, "degraded_turns": 0, "statuses": {"decided": 82}, "errors": []}
    return {"pack": "timeflow", "intents": 11, "held_out_rows": 82, "classifier_top1": 0.902, "fusion_top1": 0.927,
            "served_top1": 0.927, "served": served, "build_s": {"served": 27.0}, "rows": {"served": 907}, "finetune": False,
            "timings": {}, "selected": None, "cross_validation": None, "phrasings": phrasings}


def _result(*packs: dict) -> dict:
    return {"packs": list(packs), "git_commit": "0" * 40,
            "machine": {"cores": 2, "loadavg_at_start": [0.1], "loadavg_at_end": [0.2]}}


def test_fresh_phrasings_get_their_own_column_and_error_line():
    fresh = {"source": "benchmarks/data/phrasings_timeflow.jsonl", "rows": 173, "top1": 0.96, "degraded_turns": 0,
             "statuses": {"decided": 173}, "errors": [{"expected": "review", "answered": "schedule_query", "rows": 2}]}
    text = report(_result(_pack(fresh)))
    assert "| 0.902 | 0.927 | 0.927 | 0.960 (173) | 27 s |" in text
    assert "served top-1 0.960; errors: review → schedule_query ×2." in text


def test_a_pack_without_phrasings_shows_a_dash():
    assert "| 0.927 | – | 27 s |" in report(_result(_pack(None)))


def test_the_shipped_phrasing_sets_cover_their_pack_and_are_near_none_of_its_rows(tmp_path: Path):
    from fakes import pack  # tests/engine/fakes.py: the real shipped packs
    for name in ("cockpit", "timeflow"):
        rows = read_rows(PHRASINGS / f"phrasings_{name}.jsonl")
        ids = {i.id for i in pack(name).intents}
        assert len(rows) >= 150 and {intent for _, intent in rows} == ids
        written = [t for i in pack(name).intents for t in i.examples + i.test_examples]
        assert not [(text, near) for text, _ in rows for near in written if _similar(text, near)], \
            "a phrasing at or above difflib 0.75 to a pack row measures that row, not a fresh phrasing"
    (tmp_path / "r.jsonl").write_text(json.dumps({"text": "你好", "intent": "__social__"}, ensure_ascii=False) + "\n\n")
    assert read_rows(tmp_path / "r.jsonl") == [("你好", "__social__")]
