"""The Scheduling chain's free time over a real PostgreSQL: the user's scheduled items (not cancelled ones, not
to-dos, not another user's) and their calendars' busy events (not transparent ones, not deadlines) are their busy
times, and no slot of a draft overlaps one."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from engine.calendars.model import CalendarEvent
from engine.scheduling import AllBusyTimes, CalendarBusyTimes, Interval, ItemBusyTimes, SchedulingChain, plan
from protocol.agents import CalendarFact
from store import facts, users
from store.calendars import entries, sources

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=TZ)


class Reader:
    def __init__(self, db) -> None:
        self._db = db

    async def items(self, user_id, start_at, end_at):
        async with self._db.connection() as conn:
            return await facts.items_in_range(conn, user_id, start_at=start_at, end_at=end_at)

    async def calendar(self, user_id, start_at, end_at):  # as the served app's facts read it
        async with self._db.connection() as conn:
            found = await entries.between(conn, user_id, start_at=start_at, end_at=end_at)
        return [CalendarFact.model_validate(e.model_dump(include=set(CalendarFact.model_fields))) for e in found]


async def _user(db):
    async with db.connection() as conn:
        email = f"{uuid.uuid4().hex}@t.example"
        return (await users.register(conn, email=email, password_hash="x", display_name=None)).id


async def _item(db, user_id, title, start, hours, *, status="planned", item_type="schedule"):
    async with db.connection() as conn:
        end = start + timedelta(hours=hours) if item_type == "schedule" else None
        due = start if item_type == "todo" else None
        await conn.execute(
            "INSERT INTO task_items (user_id, item_type, title, start_at, end_at, due_at, status)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7)",
            user_id,
            item_type,
            title,
            start if item_type == "schedule" else None,
            end,
            due,
            status,
        )


async def test_busy_times_are_the_users_scheduled_items_and_slots_avoid_them(db):
    me, other = await _user(db), await _user(db)
    day = NOW.replace(hour=0)
    for d in range(7):  # every day busy 09:00–12:00 and 13:00–18:00: the free hours are 12–13 and 18–21
        await _item(db, me, f"工作{d}", day + timedelta(days=d, hours=9), 3)
        await _item(db, me, f"下午工作{d}", day + timedelta(days=d, hours=13), 5)
    await _item(db, me, "取消了的会", day + timedelta(hours=18), 3, status="cancelled")
    await _item(db, me, "交报告", day + timedelta(hours=12), 0, item_type="todo")
    await _item(db, other, "别人的安排", day + timedelta(hours=12), 9)

    busy_times = ItemBusyTimes(Reader(db))
    busy = await busy_times.busy(me, day, day + timedelta(days=7))
    assert len(busy) == 14  # neither the cancelled item, the to-do nor the other user's item
    draft = await plan(SchedulingChain(), "这周想约三次羽毛球", user_id=me, now=NOW, busy_times=busy_times, profile={})
    assert draft.task_level == "L2" and len(draft.slots) == 3
    for slot in draft.slots:
        span = Interval(slot.start_at, slot.end_at)
        assert not any(span.overlaps(b) for b in busy)
        assert span.start.astimezone(TZ).hour in (12, 18)  # the free hours; the cancelled item does not block 18:00


async def test_busy_calendar_events_join_the_items_and_slots_avoid_both(db):
    me = await _user(db)
    day = NOW.replace(hour=0)
    calendar = []
    for d in range(7):  # items 09–12 and 13–18; the calendar: a busy lunch meeting 12–13 and a transparent 18–21
        await _item(db, me, f"工作{d}", day + timedelta(days=d, hours=9), 3)
        await _item(db, me, f"下午工作{d}", day + timedelta(days=d, hours=13), 5)
        at = day + timedelta(days=d)
        calendar.append(_event(f"lunch{d}", at + timedelta(hours=12), at + timedelta(hours=13), busy=True))
        calendar.append(_event(f"free{d}", at + timedelta(hours=18), at + timedelta(hours=21), busy=False))
    calendar.append(
        CalendarEvent(
            uid="due", recurrence_id="", kind="deadline", title="交作业", start_at=None, end_at=None,
            due_at=day + timedelta(hours=19), busy=False,
        )
    )  # fmt: skip
    async with db.connection() as conn:
        source = (await sources.create(conn, me, kind="upload", name="工作日历")).id
        await entries.replace(conn, me, source, calendar)

    reader = Reader(db)
    from_calendar = await CalendarBusyTimes(reader).busy(me, day, day + timedelta(days=7))
    assert sorted((b.start.astimezone(TZ).hour, b.end.astimezone(TZ).hour) for b in from_calendar) == [(12, 13)] * 7
    busy_times = AllBusyTimes(ItemBusyTimes(reader), CalendarBusyTimes(reader))
    busy = await busy_times.busy(me, day, day + timedelta(days=7))
    assert len(busy) == 21 and busy == sorted(busy)
    draft = await plan(SchedulingChain(), "这周想约三次羽毛球", user_id=me, now=NOW, busy_times=busy_times, profile={})
    assert draft.task_level == "L2" and len(draft.slots) == 3
    for slot in draft.slots:
        span = Interval(slot.start_at, slot.end_at)
        assert not any(span.overlaps(b) for b in busy)
        assert span.start.astimezone(TZ).hour == 18  # lunch is taken now; the transparent evening stays free

    items_only = await plan(
        SchedulingChain(), "这周想约三次羽毛球", user_id=me, now=NOW, busy_times=ItemBusyTimes(reader), profile={}
    )
    assert any(s.start_at.astimezone(TZ).hour == 12 for s in items_only.slots)  # what the calendar changes


def _event(uid, start, end, *, busy):
    return CalendarEvent(
        uid=uid, recurrence_id="", kind="event", title="会", start_at=start, end_at=end, due_at=None, busy=busy
    )
