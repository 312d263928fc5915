"""iCalendar in and out with `icalendar` and `recurring-ical-events`: keys of recurring and single events, moved and
excluded occurrences, dates and floating times in the deployment's zone, VTODO deadlines, what a malformed export
cannot put into the store, and a feed that reads back as the items it was made from."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.calendars.ics_in import read_calendar
from engine.calendars.ics_out import FeedItem, feed_calendar
from engine.calendars.model import InvalidCalendar

TZ = ZoneInfo("Asia/Shanghai")
START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 12, 1, tzinfo=UTC)


def _read(body: str, **options):
    cal = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" + body + "END:VCALENDAR\r\n"
    return read_calendar(
        cal.encode(), tz=TZ, start=options.get("start", START), end=END, max_events=options.get("n", 100)
    )


def _vevent(uid: str, lines: str) -> str:
    return f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261201T000000Z\r\n{lines}END:VEVENT\r\n"


def test_recurring_events_are_keyed_by_recurrence_id_and_single_ones_by_uid():
    events = _read(
        _vevent("w", "DTSTART;TZID=Europe/Berlin:20261207T090000\r\nDURATION:PT30M\r\nRRULE:FREQ=DAILY;COUNT=3\r\n"
                "EXDATE;TZID=Europe/Berlin:20261208T090000\r\nSUMMARY:Stand-up\r\n")
        + _vevent("w", "RECURRENCE-ID;TZID=Europe/Berlin:20261209T090000\r\n"
                  "DTSTART;TZID=Europe/Berlin:20261209T100000\r\nDURATION:PT30M\r\nSUMMARY:Stand-up (late)\r\n")
        + _vevent("once", "DTSTART;VALUE=DATE:20261224\r\nSUMMARY:平安夜\r\nTRANSP:TRANSPARENT\r\n")
        + _vevent("floating", "DTSTART:20261210T150000\r\nDTEND:20261210T160000\r\nSUMMARY:本地时间\r\n")
    )  # fmt: skip
    by_key = {e.key: e for e in events}
    assert set(by_key) == {("w", "20261207T080000Z"), ("w", "20261209T080000Z"), ("once", ""), ("floating", "")}
    late = by_key[("w", "20261209T080000Z")]
    assert (late.title, late.start_at.isoformat(), late.tzid) == (
        "Stand-up (late)",
        "2026-12-09T10:00:00+01:00",
        "Europe/Berlin",
    )
    assert late.end_at - late.start_at == timedelta(minutes=30)
    eve = by_key[("once", "")]
    assert eve.all_day and not eve.busy and eve.start_at == datetime(2026, 12, 24, tzinfo=TZ)
    assert eve.end_at == datetime(2026, 12, 25, tzinfo=TZ)
    assert by_key[("floating", "")].start_at == datetime(2026, 12, 10, 15, tzinfo=TZ)


def test_what_a_malformed_export_cannot_store_is_repaired_or_left_out():
    events = _read(
        _vevent("backwards", "DTSTART:20261210T150000Z\r\nDTEND:20261210T140000Z\r\nSUMMARY:A\x00B\r\n")
        + "BEGIN:VTODO\r\nUID:undated\r\nDTSTAMP:20261201T000000Z\r\nSUMMARY:someday\r\nEND:VTODO\r\n"
        + "BEGIN:VTODO\r\nUID:due\r\nDTSTAMP:20261201T000000Z\r\nDUE;VALUE=DATE:20261220\r\nSUMMARY:\r\nEND:VTODO\r\n"
        + _vevent("", "DTSTART:20261210T150000Z\r\nSUMMARY:no uid\r\n").replace("UID:\r\n", "")
    )
    by_uid = {e.uid: e for e in events}
    assert set(by_uid) == {"backwards", "due"}
    backwards = by_uid["backwards"]
    assert backwards.end_at >= backwards.start_at and backwards.title == "AB"  # a span the store takes, no NUL
    due = by_uid["due"]
    assert (due.kind, due.due_at, due.title, due.busy) == (
        "deadline",
        datetime(2026, 12, 20, tzinfo=TZ),
        "(无标题)",
        False,
    )


def test_too_many_occurrences_and_garbage_are_refused():
    with pytest.raises(InvalidCalendar):
        _read(_vevent("daily", "DTSTART:20261201T090000Z\r\nRRULE:FREQ=DAILY\r\nSUMMARY:x\r\n"), n=50)
    with pytest.raises(InvalidCalendar):
        read_calendar(b"\x89PNG\r\n", tz=TZ, start=START, end=END, max_events=10)


def test_a_feed_reads_back_as_its_items():
    at = datetime(2026, 12, 7, 2, tzinfo=UTC)
    meeting = FeedItem(uuid.uuid4(), "schedule", "开会", None, at, at + timedelta(hours=1), None, "planned", 2, at, at)
    todo = FeedItem(
        uuid.uuid4(), "todo", "交报告", "第三章", None, None, at + timedelta(days=2), "in_progress", 1, at, at
    )
    body = feed_calendar([meeting, todo], TZ, name="Baton")
    assert feed_calendar([meeting, todo], TZ, name="Baton") == body  # the same items, the same bytes (the ETag)
    deadline, event = sorted(
        _read(body.decode().split("\r\n", 3)[3].rsplit("END:VCALENDAR", 1)[0]), key=lambda e: e.kind
    )
    assert (event.uid, event.title, event.start_at, event.end_at) == (
        f"{meeting.id}@baton",
        "开会",
        at,
        at + timedelta(hours=1),
    )
    assert (deadline.uid, deadline.due_at, deadline.status, deadline.description) == (
        f"{todo.id}@baton", at + timedelta(days=2), "in-process", "第三章"
    )  # fmt: skip
