"""The everyday benchmark's scorer over hand-made responses, its report, and the held-out set's shape."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import yaml

from benchmarks.timeflow_everyday import HELD_OUT
from benchmarks.timeflow_everyday_report import markdown
from benchmarks.timeflow_everyday_score import Observed, observe, range_right, score, summarize

TZ = ZoneInfo("Asia/Shanghai")
ITEM = "7d0e6a0c-55d7-4d51-9a35-1f3c6f0f0a01"


def decision(agent: str, function: str, start: str, end: str) -> dict:
    return {
        "type": "dialogue.decision",
        "payload": {
            "target_agent_name": agent,
            "target_function_name": function,
            "time_range": {"start_at": start, "end_at": end, "source": "user_explicit"},
        },
    }


def proposing(action: str, payload: dict, *events: dict, target: str | None = None) -> dict:
    return {
        "status": "waiting_confirmation",
        "reply": "…",
        "agent": {
            "status": "waiting_confirmation",
            "events": list(events),
            "write_request": {
                "confirmation_payload": {
                    "action": action,
                    "target_type": "task_item",
                    "target_id": target,
                    "payload": payload,
                }
            },
        },
    }


def asking(question_type: str = "normal") -> dict:
    return {
        "status": "clarify",
        "reply": "打算安排在什么时候？",
        "agent": {
            "status": "waiting_clarification",
            "events": [],
            "clarification": {"question_type": question_type, "original_function_name": "schedule_create"},
        },
    }


CREATE = proposing(
    "create",
    {"title": "和房东见面", "start_at": "2026-12-11T10:00:00+08:00", "end_at": "2026-12-11T11:00:00+08:00"},
    decision("schedule_todo_agent", "create", "2026-12-11T10:00:00+08:00", "2026-12-11T11:00:00+08:00"),
)
CASE = {
    "id": "c",
    "turns": ["帮我安排一个和房东见面的事", {"answer": "后天上午十点"}],
    "expect": {
        "agent": "schedule_todo_agent",
        "function": "create",
        "range": {"start": "2026-12-11T10:00"},
        "title": ["和房东见面"],
        "confirm": True,
    },
}


def test_a_clarified_create_that_ends_in_a_confirmation_scores_on_every_figure():
    seen = observe([asking(), CREATE], {}, applied=True)
    assert seen.asked == ["normal"] and seen.title == "和房东见面" and seen.confirmation
    assert score(CASE, seen, TZ) == {
        "agent_function": True,
        "range": True,
        "title": True,
        "confirmation": True,
        "converged": True,
    }


def test_an_answer_that_ends_elsewhere_has_not_converged_and_its_title_and_range_are_wrong():
    fallback = {"status": "fallback", "reply": "抱歉，我没太听明白", "agent": None}
    seen = observe([asking("disambiguation"), fallback], {}, applied=None)
    scored = score(CASE, seen, TZ)
    assert scored["converged"] is False and scored["range"] is False and scored["title"] is False


def test_a_move_scores_the_new_time_and_the_title_of_the_item_it_targets():
    moved = proposing(
        "update",
        {"start_at": "2026-12-11T10:00:00+08:00", "end_at": "2026-12-11T11:00:00+08:00"},
        decision("schedule_todo_agent", "update", "2026-12-10T00:00:00+08:00", "2026-12-11T00:00:00+08:00"),
        target=ITEM,
    )
    seen = observe([moved], {ITEM: "部门例会"}, applied=True)
    label = {"start": "2026-12-11T10:00", "end": "2026-12-11T11:00"}
    assert seen.title == "部门例会" and range_right(label, seen, TZ)
    assert not range_right({"start": "2026-12-11T10:00", "end": "2026-12-11T12:00"}, seen, TZ)


def test_range_labels_within_and_deadline():
    day = Observed(start=datetime(2026, 12, 9, 13, tzinfo=TZ), end=datetime(2026, 12, 9, 18, tzinfo=TZ))
    assert range_right({"within": ["2026-12-09T12:00", "2026-12-09T19:00"]}, day, TZ)
    assert not range_right({"within": ["2026-12-09T14:00", "2026-12-09T19:00"]}, day, TZ)
    todo = Observed(start=datetime(2026, 12, 11, 23, 59, tzinfo=TZ), end=datetime(2026, 12, 11, 23, 59, tzinfo=TZ))
    assert range_right({"within": ["2026-12-09T09:00", "2026-12-12T00:00"]}, todo, TZ)
    goal = Observed(deadline=datetime(2026, 12, 31, 23, 59, tzinfo=TZ))
    assert range_right({"deadline_within": ["2026-12-31T00:00", "2027-01-01T00:00"]}, goal, TZ)
    assert not range_right({"start": "2026-12-31T00:00"}, goal, TZ)


def test_summarize_counts_only_labelled_cases_and_the_report_names_the_misses():
    scored = [
        {"agent_function": True, "range": True, "title": None, "confirmation": None, "converged": None},
        {"agent_function": False, "range": None, "title": True, "confirmation": True, "converged": True},
    ]
    figures = summarize(scored)
    assert figures["agent_function"] == {"cases": 2, "right": 1, "share": 0.5, "target": 0.95}
    assert figures["range"]["cases"] == 1 and figures["converged"]["share"] == 1.0
    seen = observe([asking("disambiguation")], {})
    case = {"id": "c", "said": [CASE["turns"][0]], "statuses": ["clarify"], "expect": CASE["expect"]}
    case |= {"observed": {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in vars(seen).items()}}
    case["score"] = score(CASE, seen, TZ)
    text = markdown(
        {
            "benchmark": "b",
            "label": "",
            "set": "s",
            "now": "n",
            "planner": "none",
            "degraded_cases": 0,
            "wall_s": 1,
            "figures": summarize([case["score"]]),
            "cases": [case],
            "machine": {"cores": 2, "loadavg_1m": 1.0},
            "git_commit": "0" * 40,
        }
    )
    assert "## Misses (1 cases)" in text and "| c | 帮我安排一个和房东见面的事 |" in text


def test_the_held_out_set_has_sixty_labelled_cases_or_more():
    held_out = yaml.safe_load(HELD_OUT.read_text(encoding="utf-8"))
    cases = held_out["cases"]
    assert len(cases) >= 60 and len({c["id"] for c in cases}) == len(cases)
    assert "held out" in HELD_OUT.read_text(encoding="utf-8").splitlines()[0].lower()
    for case in cases:
        expect = case["expect"]
        assert {"agent", "function"} <= expect.keys(), case["id"]
        assert all(isinstance(t, dict) and "answer" in t for t in case["turns"][1:]), case["id"]
    assert sum(1 for c in cases if len(c["turns"]) > 1) >= 8
