"""The two-apps benchmark's rows and report (no Ray): held-out rows sampled as documented, alone against both."""

from __future__ import annotations

from benchmarks.two_apps import HELD_OUT, agreement, held_out
from benchmarks.two_apps_report import write_report


def run(system: str, packs: dict[str, list[str | None]]) -> dict:
    scores = {
        p: {"rows": len(a), "top1": sum(x == "i" for x in a) / len(a), "answers": a, "degraded_turns": 0}
        for p, a in packs.items()
    }
    title = {"ray::ServeReplica:cockpit:Orchestrator": {"processes": 1, "rss_mib": 900.0, "pss_mib": 700.0}}
    return {"system": system, "start_s": 80.0, "rss_mib": 4096.0, "pss_mib": 3072.0, "processes": 12,
            "by_title": title, "scores": scores}  # fmt: skip


def test_the_rows_are_every_nth_of_an_unstudied_set():
    rows = held_out("cockpit", 3)
    assert HELD_OUT.keys() == {"cockpit", "timeflow"} and len(rows) == 60 and all(intent for _, intent in rows)


def test_the_report_compares_each_pack_alone_with_both(tmp_path):
    result = {
        "git_commit": "abcdef12",
        "machine": {"cores": 2, "loadavg_1m": 3.0},
        "settle_s": 30,
        "every": 3,
        "held_out": {"cockpit": "benchmarks/data/phrasings_cockpit_20.jsonl"},
        "runs": [run("cockpit", {"cockpit": ["i", "i", "x"]}), run("both", {"cockpit": ["i", "x", "x"]})],
    }
    write_report(result, tmp_path)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| cockpit (`phrasings_cockpit_20.jsonl`, 1 row in 3) | 3 | 0.667 | 0.333 | 0.667 | 0 / 0 |" in report
    assert (tmp_path / "memory.png").stat().st_size > 0
    assert agreement(["a", None], ["a", None]) == 1.0
