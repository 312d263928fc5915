"""A user's task items as one iCalendar feed (RFC 5545), written by `icalendar`: an item with a start time is a
VEVENT, any other a VTODO (its due time, if any, as DUE); every time in the user's zone with its VTIMEZONE.

The output is a pure function of the items: DTSTAMP and LAST-MODIFIED are the item's own `updated_at`, so the same
items give the same bytes and a feed's ETag changes exactly when an item does."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID
from zoneinfo import ZoneInfo

from icalendar import Calendar, Event, Todo

from engine.calendars.model import item_uid

PRODID = "-//Baton//Calendar feed//ZH"
EVENT_STATUS = {"cancelled": "CANCELLED"}  # anything else is a confirmed event
TODO_STATUS = {
    "planned": "NEEDS-ACTION",
    "deferred": "NEEDS-ACTION",
    "in_progress": "IN-PROCESS",
    "completed": "COMPLETED",
    "cancelled": "CANCELLED",
}


@dataclass(frozen=True)
class FeedItem:
    id: UUID
    item_type: str
    title: str
    description: str | None
    start_at: datetime | None
    end_at: datetime | None
    due_at: datetime | None
    status: str
    version: int
    created_at: datetime
    updated_at: datetime


def item_component(item: FeedItem, tz: ZoneInfo) -> Event | Todo:
    """One item as a VEVENT (it has a start) or a VTODO, its times in `tz`."""
    component: Event | Todo
    if item.start_at is not None:
        component = Event()
        component.add("dtstart", item.start_at.astimezone(tz))
        component.add("dtend", (item.end_at or item.start_at).astimezone(tz))
        component.add("status", EVENT_STATUS.get(item.status, "CONFIRMED"))
        component.add("transp", "OPAQUE" if item.status not in ("cancelled", "completed") else "TRANSPARENT")
    else:
        component = Todo()
        if item.due_at is not None:
            component.add("due", item.due_at.astimezone(tz))
        component.add("status", TODO_STATUS.get(item.status, "NEEDS-ACTION"))
        if item.status == "completed":
            component.add("completed", item.updated_at)
    component.add("uid", item_uid(item.id))
    component.add("summary", item.title)
    if item.description:
        component.add("description", item.description)
    component.add("dtstamp", item.updated_at)
    component.add("created", item.created_at)
    component.add("last-modified", item.updated_at)
    component.add("sequence", item.version - 1)
    component.add("categories", [item.item_type])
    return component


def feed_calendar(items: list[FeedItem], tz: ZoneInfo, *, name: str) -> bytes:
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("x-wr-calname", name)
    calendar.add("x-wr-timezone", tz.key)
    for item in items:
        calendar.add_component(item_component(item, tz))
    calendar.add_missing_timezones()
    body: bytes = calendar.to_ical()
    return body


def single_object(component: Event | Todo, tz: ZoneInfo) -> str:
    """One item as the calendar object a CalDAV server stores (a VCALENDAR around it, with its VTIMEZONE)."""
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add_component(component)
    calendar.add_missing_timezones()
    text: str = calendar.to_ical().decode("utf-8")
    return text
