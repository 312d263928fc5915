"""The user's free time: their working hours in their time zone, less what keeps them busy.

What keeps them busy comes through one small interface, `BusyTimes`: the items in the store (`ItemBusyTimes`), the
busy events of the user's calendars (`CalendarBusyTimes`), or both (`AllBusyTimes`); the chain never knows which.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any, Protocol
from uuid import UUID
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from protocol.agents import CalendarFact, CandidateItem

DEFAULT_WORKING_HOURS = (time(9), time(21))
_SHORTEST_BUSY = timedelta(minutes=15)  # an item with a start and no end still takes this long
_IDLE_STATUSES = frozenset({"cancelled"})  # an item in these takes no time


@dataclass(frozen=True, order=True)
class Interval:
    """[start, end), both aware."""

    start: datetime
    end: datetime

    def overlaps(self, other: Interval) -> bool:
        return self.start < other.end and other.start < self.end

    @property
    def minutes(self) -> float:
        return (self.end - self.start).total_seconds() / 60


class BusyTimes(Protocol):
    """When the user is busy between `start` and `end`: intervals in any order, possibly overlapping."""

    async def busy(self, user_id: UUID, start: datetime, end: datetime) -> list[Interval]: ...


class ItemReader(Protocol):
    async def items(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[CandidateItem]: ...


def item_intervals(items: list[CandidateItem]) -> list[Interval]:
    """The time the items take: each scheduled item that is not cancelled; a to-do (a deadline only) takes none."""
    found = []
    for item in items:
        if item.start_at is None or item.status in _IDLE_STATUSES:
            continue
        end = item.end_at if item.end_at is not None and item.end_at > item.start_at else None
        found.append(Interval(item.start_at, end or item.start_at + _SHORTEST_BUSY))
    return found


class ItemBusyTimes:
    """The user's items in the store as busy times."""

    def __init__(self, reader: ItemReader) -> None:
        self._reader = reader

    async def busy(self, user_id: UUID, start: datetime, end: datetime) -> list[Interval]:
        return item_intervals(await self._reader.items(user_id, start, end))


class CalendarReader(Protocol):
    async def calendar(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[CalendarFact]: ...


def calendar_intervals(entries: list[CalendarFact]) -> list[Interval]:
    """The time the calendar's busy events take; a transparent or cancelled event (`busy` false), a deadline and an
    event with no length take none."""
    return [
        Interval(e.start_at, e.end_at)
        for e in entries
        if e.kind == "event" and e.busy and e.start_at is not None and e.end_at is not None and e.end_at > e.start_at
    ]


class CalendarBusyTimes:
    """The busy events of the user's calendars (imports, feeds, CalDAV) as busy times."""

    def __init__(self, reader: CalendarReader) -> None:
        self._reader = reader

    async def busy(self, user_id: UUID, start: datetime, end: datetime) -> list[Interval]:
        return calendar_intervals(await self._reader.calendar(user_id, start, end))


class AllBusyTimes:
    """Every source's busy times together, read concurrently."""

    def __init__(self, *sources: BusyTimes) -> None:
        self._sources = sources

    async def busy(self, user_id: UUID, start: datetime, end: datetime) -> list[Interval]:
        found = await asyncio.gather(*(source.busy(user_id, start, end) for source in self._sources))
        return sorted(interval for intervals in found for interval in intervals)


@dataclass(frozen=True)
class WorkingHours:
    """The local hours of each day the user may be planned into; `end` after `start`."""

    start: time
    end: time

    @classmethod
    def of(cls, profile: dict[str, Any]) -> WorkingHours:
        """`profile["working_hours"]` ({"start": "09:00", "end": "21:00"}), else the default 09:00–21:00; a value that
        does not read as two ordered clock times is the default too."""
        given = profile.get("working_hours")
        if isinstance(given, dict):
            try:
                start, end = time.fromisoformat(str(given["start"])), time.fromisoformat(str(given["end"]))
            except (KeyError, ValueError):
                return cls(*DEFAULT_WORKING_HOURS)
            if start < end:
                return cls(start, end)
        return cls(*DEFAULT_WORKING_HOURS)

    def on(self, day: date, tz: tzinfo) -> Interval:
        return Interval(datetime.combine(day, self.start, tzinfo=tz), datetime.combine(day, self.end, tzinfo=tz))

    def label(self) -> dict[str, str]:
        return {"start": self.start.strftime("%H:%M"), "end": self.end.strftime("%H:%M")}


def user_zone(profile: dict[str, Any], now: datetime) -> tzinfo:
    """The profile's IANA `timezone` (else `time_zone`), else the zone `now` carries."""
    for key in ("timezone", "time_zone"):
        name = profile.get(key)
        if isinstance(name, str) and name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    assert now.tzinfo is not None
    return now.tzinfo


def zone_name(tz: tzinfo, now: datetime) -> str:
    return getattr(tz, "key", None) or now.astimezone(tz).tzname() or "UTC"


def subtract(window: Interval, busy: list[Interval]) -> list[Interval]:
    """`window` less every busy interval, in time order."""
    free = [window]
    for b in sorted(busy):
        rest = []
        for f in free:
            if not f.overlaps(b):
                rest.append(f)
                continue
            if f.start < b.start:
                rest.append(Interval(f.start, b.start))
            if b.end < f.end:
                rest.append(Interval(b.end, f.end))
        free = rest
    return free


def free_on(day: date, *, tz: tzinfo, hours: WorkingHours, busy: list[Interval], after: datetime) -> list[Interval]:
    """The day's free intervals: its working hours, from `after` on, less the busy ones."""
    window = hours.on(day, tz)
    if after > window.start:
        window = Interval(max(after, window.start), window.end)
    if window.end <= window.start:
        return []
    return subtract(window, busy)


def is_free(slot: Interval, *, tz: tzinfo, hours: WorkingHours, busy: list[Interval]) -> bool:
    """Whether `slot` lies inside one day's working hours and overlaps no busy interval (the benchmark's check)."""
    local = Interval(slot.start.astimezone(tz), slot.end.astimezone(tz))
    window = hours.on(local.start.date(), tz)
    inside = window.start <= local.start and local.end <= window.end
    return inside and not any(slot.overlaps(b) for b in busy)
