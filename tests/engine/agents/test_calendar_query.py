"""A range query lists Baton's items and the user's calendar entries together, in one time order, each entry marked
by its calendar; entries are never offered as candidates for a write; a replan never lands on busy calendar time."""

from __future__ import annotations

from protocol.agents import CalendarFact
from tests.engine.agents.agent_inputs import at, fact, item, make_input
from tests.engine.agents.test_schedule_todo import REGISTRY


async def test_a_day_lists_items_and_calendar_entries_together() -> None:
    gym = item("健身", start=at(12, 2, 18), end=at(12, 2, 19))
    inp = make_input("明天有什么安排", at(12, 2), at(12, 3), items=[gym])
    inp.calendar_entries = [
        CalendarFact(title="组会", kind="event", start_at=at(12, 2, 9), end_at=at(12, 2, 10), source_name="工作"),
        CalendarFact(title="作业 3", kind="deadline", due_at=at(12, 2, 23, 59), source_name="课程"),
    ]
    envelope = await REGISTRY.dispatch("schedule_todo_agent", "query", inp)
    assert envelope.result["reply"] == (
        "明天有 3 项安排：09:00 组会（日历：工作）；18:00 健身；作业 3（截止 23:59，日历：课程）。"
    )
    assert [i["title"] for i in envelope.result["items"]] == ["健身"]  # only Baton's items can be acted on
    assert [e["title"] for e in envelope.result["calendar_entries"]] == ["组会", "作业 3"]


async def test_a_day_with_only_calendar_entries_is_not_empty() -> None:
    inp = make_input("周三有什么安排", at(12, 2), at(12, 3))
    inp.calendar_entries = [
        CalendarFact(title="校庆", kind="event", start_at=at(12, 2), end_at=at(12, 3), all_day=True, source_name="学校")
    ]
    envelope = await REGISTRY.dispatch("schedule_todo_agent", "query", inp)
    assert envelope.result["reply"] == "明天有 1 项安排：全天 校庆（日历：学校）。"


async def test_replan_never_moves_an_item_onto_busy_calendar_time() -> None:
    reading = item("读书", start=at(12, 1, 8, 30), end=at(12, 1, 9, 30))
    inp = make_input(
        "今天没读完，往后排", at(12, 1), at(12, 2), items=[reading], feedbacks=[fact(reading, "not_completed")]
    )
    inp.calendar_entries = [
        CalendarFact(title="组会", kind="event", start_at=at(12, 2, 9), end_at=at(12, 2, 10), source_name="工作"),
        CalendarFact(
            title="出差", kind="event", start_at=at(12, 3), end_at=at(12, 4), all_day=True, source_name="工作"
        ),
        CalendarFact(
            title="可约", kind="event", start_at=at(12, 4, 8), end_at=at(12, 4, 10), busy=False, source_name="工作"
        ),
    ]
    envelope = await REGISTRY.dispatch("replan_agent", "replan", inp)
    (change,) = envelope.db_action["payload"]["changes"]
    # 12月2日 overlaps the meeting, 12月3日 the trip; a free (transparent) event does not block 12月4日
    assert change["start_at"] == "2026-12-04T08:30:00+08:00" and change["end_at"] == "2026-12-04T09:30:00+08:00"
