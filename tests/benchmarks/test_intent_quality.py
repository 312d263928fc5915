"""The routing-quality report: fresh phrasings scored beside a pack's test split."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from difflib import SequenceMatcher
from pathlib import Path

import numpy as np

from benchmarks.intent_quality import phrasing_sets, read_rows, report

NEAR = 0.75


def near_pairs(texts: list[str], written: list[str], near: float = NEAR) -> list[tuple[str, str]]:
    """The (text, row) pairs at or above difflib's ratio `near`. difflib's `quick_ratio` (shared characters, as a
    multiset) bounds `ratio` from above, so it is computed for every pair at once from an index of the rows'
    characters, and `ratio` itself only for the pairs it lets through: the same pairs as checking each one."""
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for j, row in enumerate(written):
        for char, count in Counter(row).items():
            postings[char].append((j, count))
    index = {c: (np.array([j for j, _ in p]), np.array([k for _, k in p])) for c, p in postings.items()}
    lengths = np.array([len(row) for row in written])
    found = []
    for text in texts:
        shared = np.zeros(len(written))
        for char, count in Counter(text).items():
            if char in index:
                rows, counts = index[char]
                shared[rows] += np.minimum(counts, count)
        bound = 2 * shared / np.maximum(len(text) + lengths, 1)
        for j in np.flatnonzero(bound >= near):
            if SequenceMatcher(None, text, written[j]).ratio() >= near:
                found.append((text, written[j]))
    return found


def _pack(phrasings: list[dict]) -> dict:
    served = {"top1": 0.927, "degraded_turns": 0, "statuses": {"decided": 82}, "errors": []}
    return {
        "pack": "timeflow",
        "intents": 11,
        "held_out_rows": 82,
        "classifier_top1": 0.902,
        "fusion_top1": 0.927,
        "served_top1": 0.927,
        "served": served,
        "build_s": {"served": 27.0},
        "rows": {"served": 907},
        "finetune": False,
        "timings": {},
        "selected": None,
        "cross_validation": None,
        "phrasings": phrasings,
    }


def _result(*packs: dict) -> dict:
    return {
        "packs": list(packs),
        "git_commit": "0" * 40,
        "machine": {"cores": 2, "loadavg_at_start": [0.1], "loadavg_at_end": [0.2]},
    }


def test_each_set_of_fresh_phrasings_gets_its_figure_and_error_line():
    first = {
        "source": "benchmarks/data/phrasings_timeflow.jsonl",
        "rows": 173,
        "top1": 0.96,
        "degraded_turns": 0,
        "statuses": {"decided": 173},
        "errors": [{"expected": "review", "answered": "schedule_query", "rows": 2}],
    }
    second = {
        **first,
        "source": "benchmarks/data/phrasings_timeflow_2.jsonl",
        "rows": 176,
        "top1": 0.9716,
        "errors": [],
    }
    text = report(_result(_pack([first, second])))
    assert "| 0.902 | 0.927 | 0.927 | 0.960 (173) / 0.972 (176) | 27 s |" in text
    assert (
        "(`benchmarks/data/phrasings_timeflow.jsonl`, 173 rows): served top-1 0.960; "
        "errors: review → schedule_query ×2." in text
    )
    assert "(`benchmarks/data/phrasings_timeflow_2.jsonl`, 176 rows): served top-1 0.972; errors: none." in text


def test_a_pack_without_phrasings_shows_a_dash():
    assert "| 0.927 | – | 27 s |" in report(_result(_pack([])))


def test_the_shipped_phrasing_sets_cover_their_pack_and_are_near_none_of_its_rows(tmp_path: Path):
    from tests.support.fakes import pack  # tests/support/fakes.py: the real shipped packs

    for name in ("cockpit", "timeflow"):
        sets = phrasing_sets(name)
        assert [p.name for p in sets][:2] == [f"phrasings_{name}.jsonl", f"phrasings_{name}_2.jsonl"]
        ids = {i.id for i in pack(name).intents}
        written = [t for i in pack(name).intents for t in i.examples + i.test_examples]
        covered = set()
        for path in sets:
            rows = read_rows(path)
            covered |= {intent for _, intent in rows}
            # a later set lost the rows near a pack row or an earlier set's row: the short commands everyone says
            assert len(rows) >= 100, path
            assert not near_pairs([text for text, _ in rows], written), (
                f"{path.name}: a phrasing at or above difflib 0.75 to a pack row measures that row, "
                "not a fresh phrasing"
            )
        assert covered == ids
    assert near_pairs(["把空调关了吧"], ["把空调关了", "打开车窗"]) == [("把空调关了吧", "把空调关了")]
    (tmp_path / "r.jsonl").write_text(json.dumps({"text": "你好", "intent": "__social__"}, ensure_ascii=False) + "\n\n")
    assert read_rows(tmp_path / "r.jsonl") == [("你好", "__social__")]
