"""Seed 000's Scheduling chain, deterministic: task levels, slots inside the user's free time and working hours in
their time zone and never overlapping, questions about what is missing. Phrases apart from the held-out set."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.scheduling import Interval, SchedulingChain, Signal, WorkingHours
from engine.scheduling.free_time import is_free, subtract

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=TZ)  # a Tuesday


def at(day: int, hour: int, minute: int = 0, tz=TZ) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=tz)


BUSY = [
    Interval(at(1, 13), at(1, 15)),
    Interval(at(1, 18), at(1, 20, 30)),
    Interval(at(2, 9), at(2, 21)),  # a whole working day
    Interval(at(3, 18, 30), at(3, 19, 30)),
    Interval(at(4, 17), at(4, 23)),
]


def run(text: str, *, busy=BUSY, profile=None, signal=None, now=NOW):
    return asyncio.run(SchedulingChain().run(text, now=now, busy=busy, profile=profile or {}, signal=signal))


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("打算这周每天晚上写一小时小说", "L2"),
        ("周四之前要把方案写完，大概四个小时", "L2"),
        ("这周想约三次羽毛球", "L2"),
        ("帮我安排一下考研复习", "L2"),
        ("想学做蛋糕", "L1"),
        ("有机会想学学摄影", "L1"),
        ("马上先把作业交了", "L3"),
        ("今晚把衣服洗了", "L3"),
        ("明天先去趟邮局寄快递", "L3"),
    ],
)
def test_task_level_from_rules(text, level):
    assert run(text).task_level == level


def test_the_classifier_breaks_a_tie_the_words_leave_open():
    assert run("做个年终总结", signal=Signal("long_task_split", 0.8)).task_level == "L2"
    assert run("做个年终总结", signal=Signal("schedule_create", 0.8)).task_level == "L3"
    assert run("打算这周每天晚上写一小时小说", signal=Signal("schedule_create", 0.9)).task_level == "L2"


@pytest.mark.parametrize(
    "text", ["打算这周每天晚上写一小时小说", "周四之前要把方案写完，大概四个小时", "想学做蛋糕", "马上先把作业交了"]
)
def test_every_slot_lies_in_free_time_inside_working_hours_and_apart(text):
    draft = run(text)
    hours = WorkingHours.of({})
    slots = [Interval(s.start_at, s.end_at) for s in draft.slots]
    assert slots
    for i, slot in enumerate(slots):
        assert slot.start >= NOW
        assert is_free(slot, tz=TZ, hours=hours, busy=BUSY), slot
        assert not any(slot.overlaps(other) for other in slots[i + 1 :])


def test_a_daily_plan_takes_one_slot_a_day_in_the_part_of_day_said_and_skips_a_full_day():
    draft = run("打算这周每天晚上写一小时小说")
    days = [s.start_at.astimezone(TZ).date() for s in draft.slots]
    assert len(days) == len(set(days))
    assert at(2, 0).date() not in days  # busy all day
    assert all(s.end_at - s.start_at == timedelta(hours=1) for s in draft.slots)
    # today's and Friday's evenings are taken (working hours end at 21:00): those sessions move to a free daytime hour
    assert all(s.start_at.astimezone(TZ).hour >= 18 for s in draft.slots if s.start_at.day not in (1, 4))
    assert draft.slots[0].start_at == at(1, 10) and any(
        "改到当天其他空闲时间" in n for n in draft.constraints_and_missing_info
    )
    assert draft.missing == [] and draft.questions == []


def test_a_total_effort_is_split_into_sessions_before_the_deadline():
    draft = run("周四之前要把方案写完，大概四个小时")
    assert sum((s.end_at - s.start_at for s in draft.slots), timedelta()) == timedelta(hours=4)
    assert all(s.end_at <= at(4, 0) + timedelta(days=1) for s in draft.slots)


def test_working_hours_come_from_the_profile():
    draft = run("这周想约三次羽毛球", profile={"working_hours": {"start": "19:00", "end": "22:00"}})
    assert draft.working_hours == {"start": "19:00", "end": "22:00"}
    for slot in draft.slots:
        local = slot.start_at.astimezone(TZ)
        assert local.hour >= 19 and slot.end_at.astimezone(TZ) <= local.replace(hour=22, minute=0)


def test_the_profile_time_zone_places_the_slots():
    ny = ZoneInfo("America/New_York")
    busy = [Interval(at(1, 8, tz=ny), at(1, 20, tz=ny))]
    now = at(1, 22)  # Shanghai 22:00 is 09:00 in New York
    draft = run("明天先去趟邮局寄快递", busy=busy, profile={"timezone": "America/New_York"}, now=now)
    assert draft.time_zone == "America/New_York"
    slot = draft.slots[0]
    local = slot.start_at.astimezone(ny)
    assert local.date() == at(2, 0, tz=ny).date() and 9 <= local.hour < 21
    assert is_free(Interval(slot.start_at, slot.end_at), tz=ny, hours=WorkingHours.of({}), busy=busy)


def test_an_idea_asks_what_is_missing_and_an_action_says_how_to_start():
    idea = run("想学做蛋糕")
    assert idea.kind == "plan" and idea.missing == ["goal", "period", "duration"]
    assert len(idea.questions) == 3 and "60 分钟" in idea.questions[2]
    assert idea.next_steps_suggestion and idea.start_instructions is None
    action = run("马上先把作业交了")
    assert action.kind == "action" and len(action.slots) == 1 and action.questions == []
    assert "交作业" in action.title and action.start_instructions and "开始" in action.start_instructions


def test_no_free_time_means_no_slot_and_says_so():
    full = [Interval(at(d, 0), at(d, 23, 59)) for d in range(1, 9)]
    draft = run("打算这周每天晚上写一小时小说", busy=full)
    assert draft.slots == [] and "没有找到" in draft.draft_text


def test_subtract_and_working_hours_edges():
    window = Interval(at(1, 9), at(1, 21))
    assert subtract(window, [Interval(at(1, 8), at(1, 10)), Interval(at(1, 20), at(1, 22))]) == [
        Interval(at(1, 10), at(1, 20))
    ]
    assert WorkingHours.of({"working_hours": {"start": "22:00", "end": "08:00"}}) == WorkingHours.of({})
    assert not is_free(Interval(at(1, 20, 30), at(1, 21, 30)), tz=TZ, hours=WorkingHours.of({}), busy=[])


def test_an_unknown_time_zone_or_a_past_period_falls_back_sanely():
    draft = run("想学做蛋糕", profile={"timezone": "Mars/Olympus"})
    assert draft.time_zone == "Asia/Shanghai" and draft.slots
    past = run("上周想约三次羽毛球")  # a period already over: the coming days instead
    assert past.slots and all(s.start_at >= NOW for s in past.slots)


def test_the_words_of_a_request():
    from engine.scheduling.words import read

    words = read("接下来两周每周去三次游泳馆，每次一个半小时", NOW)
    assert (words.per_week, words.session_minutes, words.total_minutes) == (3, 90, None)
    assert words.period == (at(1, 0), at(15, 0)) and words.title == "去游泳馆"
    assert read("把积压的邮件回一下", NOW).title == "回积压的邮件"
    assert read("这个方案大概要三个小时", NOW).total_minutes == 180
