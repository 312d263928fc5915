"""The planning benchmark's scorer: a slot outside working hours, on a seeded item or on another slot is counted; the
held-out set is big enough and kept out of the pack's examples."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import yaml

from benchmarks.timeflow_planning import HELDOUT, score_case, seeded_items, summarize
from protocol.scheduling import PlanSlot, SchedulingDraft

TZ = ZoneInfo("Asia/Shanghai")


def _draft(level: str, *slots: tuple[int, int]) -> SchedulingDraft:
    return SchedulingDraft(
        task_level=level,
        kind="plan",
        title="t",
        draft_text="d",
        slots=[
            PlanSlot(
                title="t", start_at=datetime(2026, 12, 7, a, tzinfo=TZ), end_at=datetime(2026, 12, 7, b, tzinfo=TZ)
            )
            for a, b in slots
        ],
        missing=["duration"],
        time_zone="Asia/Shanghai",
        working_hours={"start": "09:00", "end": "21:00"},
    )


def test_each_bad_slot_is_counted():
    user = {"items": [{"title": "组会", "day": 0, "start": "10:00", "end": "12:00"}]}
    items = seeded_items(user, datetime(2026, 12, 7).date(), TZ)
    case = {"text": "x", "level": "L2", "missing": ["duration"]}
    row = score_case(case, _draft("L2", (8, 9), (11, 12), (14, 16), (15, 17)), items, TZ)
    assert row["level_right"] and row["missing_right"]
    assert (row["slots_outside_working_hours"], row["slots_overlapping_items"]) == (1, 1)
    assert row["slots_overlapping_each_other"] == 2
    wrong = score_case({**case, "level": "L1", "missing": []}, _draft("L2", (14, 15)), items, TZ)
    summary = summarize([row, wrong])
    assert summary["level_accuracy"] == 0.5 and summary["confusion"]["L1"]["L2"] == 1
    assert summary["slots_overlapping_items"] == 1


def test_the_held_out_set_is_big_enough_and_not_in_the_pack():
    data = yaml.safe_load(HELDOUT.read_text(encoding="utf-8"))
    texts = {case["text"] for case in data["requests"]}
    assert len(texts) == len(data["requests"]) >= 30
    assert {case["level"] for case in data["requests"]} == {"L1", "L2", "L3"}
    pack = (HELDOUT.parents[2] / "config" / "domains" / "timeflow" / "intents" / "timeflow.yaml").read_text("utf-8")
    assert not [t for t in texts if t in pack]
