"""Seed 000's DraftPlan and DraftAction, computed: the sessions a plan takes and the slot of a first action, each in
the user's free time (working hours, their zone, no overlap with what keeps them busy or with each other)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo

from engine.scheduling.free_time import Interval, WorkingHours, free_on
from engine.scheduling.words import RequestWords
from protocol.scheduling import TaskLevel

DEFAULT_SESSION_MIN = 60
LONGEST_SESSION_MIN = 120
MOST_SLOTS = 14
DEFAULT_WINDOW_DAYS = 7
_SESSIONS_BY_LEVEL = {"L1": 2, "L2": 3}
_STEP = timedelta(minutes=15)  # slots start on the quarter hour


@dataclass(frozen=True)
class Drafted:
    window: Interval
    minutes: int
    slots: list[Interval]
    notes: list[str] = field(default_factory=list)  # assumptions and shortfalls, said to the user


def _ceil_quarter(moment: datetime) -> datetime:
    floor = moment.replace(minute=moment.minute - moment.minute % 15, second=0, microsecond=0)
    return floor if floor == moment else floor + _STEP


def window_of(words: RequestWords, level: TaskLevel, now: datetime) -> Interval:
    """The period the draft fills: the one the user said, from now on; else the next days (an action: today and
    tomorrow)."""
    midnight = datetime.combine(now.date(), time(), tzinfo=now.tzinfo)
    if words.period is not None and words.period[1] > now:
        return Interval(max(words.period[0], now), words.period[1])
    days = 2 if level == "L3" else DEFAULT_WINDOW_DAYS
    return Interval(now, midnight + timedelta(days=days))


def session_minutes(words: RequestWords, level: TaskLevel, sessions: int) -> int:
    if words.session_minutes:
        return words.session_minutes
    if words.total_minutes:
        return max(15, math.ceil(words.total_minutes / sessions / 15) * 15)
    return DEFAULT_SESSION_MIN


def session_count(words: RequestWords, level: TaskLevel, days: int) -> int:
    if level == "L3":
        return 1
    if words.daily:
        return min(days, MOST_SLOTS)
    if words.per_week:
        return min(MOST_SLOTS, max(1, round(words.per_week * days / 7)))
    if words.sessions:
        return words.sessions
    if words.total_minutes:
        return min(MOST_SLOTS, math.ceil(words.total_minutes / LONGEST_SESSION_MIN))
    return 3 if words.several else _SESSIONS_BY_LEVEL.get(level, 1)


def _days(window: Interval, tz: tzinfo) -> list[date]:
    first, last = window.start.astimezone(tz).date(), (window.end - timedelta(microseconds=1)).astimezone(tz).date()
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _fit(
    day: date,
    minutes: int,
    *,
    tz: tzinfo,
    hours: WorkingHours,
    busy: list[Interval],
    after: datetime,
    part: tuple[time, time] | None,
) -> Interval | None:
    """The day's first free slot of `minutes`, inside `part` of the day when one is said."""
    length = timedelta(minutes=minutes)
    for free in free_on(day, tz=tz, hours=hours, busy=busy, after=after):
        start, end = free.start, free.end
        if part is not None:
            start = max(start, datetime.combine(day, part[0], tzinfo=tz))
            end = min(end, datetime.combine(day, part[1], tzinfo=tz))
        start = _ceil_quarter(start)
        if start + length <= end:
            return Interval(start, start + length)
    return None


def draft(
    words: RequestWords,
    level: TaskLevel,
    *,
    now: datetime,
    tz: tzinfo,
    hours: WorkingHours,
    busy: list[Interval],
) -> Drafted:
    """The draft's slots: one per day for a daily plan, else the sessions spread evenly over the window's days; a day
    without room moves a session to the next day that has it. `now` is aware; `busy` holds everything that takes
    the user's time in the window."""
    now = now.astimezone(tz)
    window = window_of(words, level, now)
    days = _days(window, tz)
    count = session_count(words, level, len(days))
    minutes = session_minutes(words, level, count)
    notes: list[str] = []
    if minutes > 12 * 60:
        minutes, notes = 12 * 60, ["一次最多安排 12 小时"]
    after = _ceil_quarter(max(now, window.start))
    taken = list(busy)
    slots: list[Interval] = []
    targets = range(len(days)) if words.daily else [i * len(days) // count for i in range(count)]
    used: set[date] = set()
    for target in targets:
        for day in days[target:] if not words.daily else days[target : target + 1]:
            if day in used:
                continue
            found = _fit(day, minutes, tz=tz, hours=hours, busy=taken, after=after, part=words.part_of_day)
            if found is None and words.part_of_day is not None:
                found = _fit(day, minutes, tz=tz, hours=hours, busy=taken, after=after, part=None)
                if found is not None and "说的时段没有空，改到当天其他空闲时间" not in notes:
                    notes.append("说的时段没有空，改到当天其他空闲时间")
            if found is not None and found.end <= window.end:
                slots.append(found)
                taken.append(found)
                used.add(day)
                break
        if len(slots) >= MOST_SLOTS:
            break
    if len(slots) < count:
        notes.append(f"这段时间的空闲不够：想排 {count} 次，只找到 {len(slots)} 个空档")
    return Drafted(window=window, minutes=minutes, slots=sorted(slots), notes=notes)
