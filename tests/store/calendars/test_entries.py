"""Calendar entries in the store: replaced by key (added, updated, removed counted), read by time range, and the
time a scheduler avoids (busy events only: not a transparent one, not a deadline)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine.calendars.model import CalendarEvent
from engine.scheduling.free_time import calendar_intervals
from protocol.agents import CalendarFact
from store.calendars import entries, sources
from tests.store.calendars.support import new_user

pytestmark = pytest.mark.store


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)


def _event(uid: str, start: datetime, end: datetime, *, busy: bool = True, title: str = "会") -> CalendarEvent:
    return CalendarEvent(
        uid=uid, recurrence_id="", kind="event", title=title, start_at=start, end_at=end, due_at=None, busy=busy
    )


async def _source(db, user_id, name="工作"):
    async with db.connection() as conn:
        return (await sources.create(conn, user_id, kind="upload", name=name)).id


async def test_replace_counts_and_busy_time(db):
    user_id = await new_user(db)
    source_id = await _source(db, user_id)
    deadline = CalendarEvent(
        uid="d", recurrence_id="", kind="deadline", title="交作业", start_at=None, end_at=None, due_at=_at(8, 10),
        busy=False,
    )  # fmt: skip
    first = [
        _event("a", _at(8, 1), _at(8, 2)),
        _event("b", _at(8, 1, 30), _at(8, 3)),  # overlaps a
        _event("c", _at(8, 3), _at(8, 4)),  # touches b
        _event("free", _at(8, 5), _at(8, 6), busy=False),
        _event("late", _at(8, 7), _at(8, 12)),  # runs past the range's end
        _event("other-day", _at(9, 1), _at(9, 2)),
        deadline,
    ]
    async with db.connection() as conn:
        assert await entries.replace(conn, user_id, source_id, first) == entries.Replaced(added=7, updated=0, removed=0)
        listed = await entries.between(conn, user_id, start_at=_at(8, 0), end_at=_at(9, 0))
        assert [e.uid for e in listed] == ["a", "b", "c", "free", "late", "d"]
        assert {e.source_name for e in listed} == {"工作"}
        facts = [CalendarFact.model_validate(e.model_dump(include=set(CalendarFact.model_fields))) for e in listed]
        busy = [(i.start, i.end) for i in calendar_intervals(facts)]
        assert busy == [
            (_at(8, 1), _at(8, 2)),
            (_at(8, 1, 30), _at(8, 3)),
            (_at(8, 3), _at(8, 4)),
            (_at(8, 7), _at(8, 12)),
        ]  # neither the transparent event nor the deadline

        again = [e for e in first if e.uid != "other-day"]
        again[0] = _event("a", _at(8, 1), _at(8, 2), title="改了")
        assert await entries.replace(conn, user_id, source_id, again) == entries.Replaced(added=0, updated=1, removed=1)
        other_user = await new_user(db)
        assert await entries.between(conn, other_user, start_at=_at(8, 0), end_at=_at(9, 0)) == []
