"""An iCalendar file (a Moodle or Google export, a feed, a CalDAV object) read into occurrences: `icalendar` parses
it, `recurring-ical-events` expands RRULE/RDATE/EXDATE and moved instances over a window. An event that recurs is
keyed by its UID and each occurrence's RECURRENCE-ID; one that does not, by its UID alone (so moving it updates
the same entry). A VTODO is a deadline at its DUE.

CPU work on untrusted bytes: callers bound the bytes first and run this off the event loop."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import recurring_ical_events
from icalendar import Calendar, Component

from engine.calendars.model import CalendarEvent, InvalidCalendar

MAX_TITLE = 500
MAX_TEXT = 4000
UNTITLED = "(无标题)"


def parse(data: bytes | str) -> Calendar:
    try:
        calendar = Calendar.from_ical(data)
    except (ValueError, KeyError, IndexError, TypeError) as exc:  # what icalendar raises on malformed content
        raise InvalidCalendar(f"The file is not valid iCalendar: {str(exc)[:200]}", field="file") from None
    if not isinstance(calendar, Calendar):
        raise InvalidCalendar("The file holds no VCALENDAR.", field="file")
    return calendar


def read_calendar(
    data: bytes | str | Calendar, *, tz: ZoneInfo, start: datetime, end: datetime, max_events: int
) -> list[CalendarEvent]:
    """Every VEVENT and VTODO occurrence touching [start, end), times made aware (a date or a floating time is in
    `tz`); more than `max_events` is refused."""
    calendar = data if isinstance(data, Calendar) else parse(data)
    recurring = {
        str(c.get("UID", ""))
        for c in calendar.walk()
        if c.name in ("VEVENT", "VTODO") and any(p in c for p in ("RRULE", "RDATE", "RECURRENCE-ID"))
    }
    # an undated to-do has no place in a time range (the expansion gives it a far-future date of its own)
    undated = {str(c.get("UID", "")) for c in calendar.walk("VTODO") if "DUE" not in c and "DTSTART" not in c}
    try:
        occurrences: Iterable[Component] = recurring_ical_events.of(
            calendar, components=("VEVENT", "VTODO"), skip_bad_series=True
        ).between(start, end)
        events: list[CalendarEvent] = []
        for component in occurrences:
            if "UID" not in component or str(component["UID"]) in undated:
                continue  # RFC 5545 requires a UID; without it an occurrence has no stable identity
            event = occurrence(component, tz, recurring)
            if (event.start_at if event.kind == "event" else event.due_at) is None:
                continue  # an undated to-do (or an event without a start) has no place in a time range
            events.append(event)
            if len(events) > max_events:
                raise InvalidCalendar(
                    f"The calendar holds more than {max_events} events between {start:%Y-%m-%d} and {end:%Y-%m-%d}.",
                    field="file",
                )
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidCalendar(f"The calendar cannot be expanded: {str(exc)[:200]}", field="file") from None
    return events


def occurrence(component: Component, tz: ZoneInfo, recurring: set[str]) -> CalendarEvent:
    uid = str(component["UID"])
    start = _aware(component.get("DTSTART"), tz)
    all_day = _is_date(component.get("DTSTART"))
    status = str(component.get("STATUS", "")).lower() or None
    common: dict[str, Any] = {
        "uid": _clean(uid)[:MAX_TITLE],
        "recurrence_id": _recurrence_key(component) if uid in recurring else "",
        "title": (_clean(str(component.get("SUMMARY", ""))).strip() or UNTITLED)[:MAX_TITLE],
        "description": _text(component.get("DESCRIPTION")),
        "location": _text(component.get("LOCATION")),
        "all_day": all_day,
        "tzid": _tzid(component.get("DTSTART")) or _tzid(component.get("DUE")),
        "status": status,
        "last_modified": _aware(component.get("LAST-MODIFIED") or component.get("DTSTAMP"), ZoneInfo("UTC")),
    }
    if component.name == "VTODO":
        due = _aware(component.get("DUE"), tz) or start
        return CalendarEvent(kind="deadline", start_at=None, end_at=None, due_at=due, busy=False, **common)
    end = _aware(component.get("DTEND"), tz)
    if end is None and start is not None:
        duration = component.get("DURATION")
        end = start + (duration.dt if duration is not None else timedelta(days=1) if all_day else timedelta(0))
    if end is not None and start is not None and end < start:
        end = start  # an end before the start (a malformed export): an instant, not a negative span
    busy = str(component.get("TRANSP", "OPAQUE")).upper() != "TRANSPARENT" and status != "cancelled"
    return CalendarEvent(kind="event", start_at=start, end_at=end, due_at=None, busy=busy, **common)


def _is_date(prop: Any) -> bool:
    return prop is not None and isinstance(prop.dt, date) and not isinstance(prop.dt, datetime)


def _aware(prop: Any, tz: ZoneInfo) -> datetime | None:
    if prop is None:
        return None
    value = prop.dt
    if not isinstance(value, datetime):
        return datetime.combine(value, time(0), tz)
    return value if value.tzinfo is not None else value.replace(tzinfo=tz)


def _tzid(prop: Any) -> str | None:
    if prop is None or not isinstance(prop.dt, datetime) or prop.dt.tzinfo is None:
        return None
    return str(getattr(prop.dt.tzinfo, "key", None) or prop.params.get("TZID") or "UTC")


def _recurrence_key(component: Component) -> str:
    """The occurrence's RECURRENCE-ID as text: a date, or a time in UTC (a floating one as written)."""
    prop = component.get("RECURRENCE-ID") or component.get("DTSTART") or component.get("DUE")
    value = prop.dt
    if not isinstance(value, datetime):
        day: str = value.isoformat()
        return day
    if value.tzinfo is None:
        return value.strftime("%Y%m%dT%H%M%S")
    return value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _clean(text: str) -> str:
    """Text as PostgreSQL stores it: no NUL characters."""
    return text.replace("\x00", "")


def _text(prop: Any) -> str | None:
    text = _clean(str(prop)) if prop is not None else ""
    return text[:MAX_TEXT] if text.strip() else None
