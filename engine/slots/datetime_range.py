"""Date/time slot: TimeRange and extract_datetime, combining dates, day periods and clock times."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from engine.slots.dates import _Days, _find_days
from engine.slots.limits import DEFAULT_LIMITS, SlotLimits
from engine.slots.numbers import _INT, _INT_FIRST, _int
from engine.slots.scanner import _Scanner


@dataclass(frozen=True)
class TimeRange:
    """A resolved time expression; `end` is exclusive, both tz-aware in the user's zone."""

    start: datetime
    end: datetime
    text: str
    all_day: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "text": self.text,
            "all_day": self.all_day,
        }


@dataclass(frozen=True)
class _Period:
    start_hour: int
    end_hour: int
    kind: str  # how a bare clock hour is read inside this period: am / pm / noon / night / evening


_PERIODS = {
    "凌晨": _Period(0, 6, "night"),
    "半夜": _Period(0, 6, "night"),
    "清晨": _Period(5, 8, "am"),
    "早上": _Period(6, 9, "am"),
    "早晨": _Period(6, 9, "am"),
    "上午": _Period(8, 12, "am"),
    "中午": _Period(11, 14, "noon"),
    "下午": _Period(13, 18, "pm"),
    "傍晚": _Period(17, 19, "pm"),
    "晚上": _Period(18, 24, "evening"),
    "夜里": _Period(18, 24, "evening"),
    "夜间": _Period(18, 24, "evening"),
    "深夜": _Period(22, 24, "evening"),
}
_HALF_DAY = 12
_DAY_HOURS = 24
_HOUR_MINUTES = 60
_NOON_EARLIEST = 10  # 中午十一点 stays 11:00, 中午一点 becomes 13:00
_EVENING_EARLIEST = 5  # 晚上一点 means 01:00 of the next day
_BARE_PM_HOURS = range(1, 7)  # a bare 三点 means 15:00
_HALF_HOUR = 30
_QUARTERS = {"一刻": 15, "三刻": 45}
_ONE_AS_A_BIT_BEFORE = set("高低快慢大小多少早晚好近远亮暗热冷凉暖强弱轻重紧松长短差有")

_RE_DELTA = re.compile(rf"(?P<n>{_INT_FIRST})?个?(?P<half>半)?个?(?P<unit>小时|钟头|分钟)(?:以后|之后|后)")
_RE_PERIOD = re.compile("|".join(_PERIODS))
# a period said as how long something went on (下了一上午的雨, 忙了整整一下午): a length, not the time
_RE_LENGTH_BEFORE = re.compile(r"了(?:整整)?(?:一|一整个|一个)$")
_RE_CLOCK_COLON = re.compile(r"(?<!\d)(?P<h>[01]?\d|2[0-4])[:：](?P<m>[0-5]\d)(?!\d)")
# 四点整 is four o'clock; 四点整理 / 整天 / 整个 are words of their own
_RE_CLOCK_CN = re.compile(
    rf"(?P<h>{_INT_FIRST})(?:点|时)钟?(?:(?P<half>半)|(?P<quarter>一刻|三刻)|(?P<m>{_INT})分?)?"
    r"(?:整(?![理顿个天晚夜齐改修容合体形整数套场点]))?"
)
# 这个月剩下的日子, 这周剩下几天, 这礼拜后头几天: the rest of a period that has begun, from today
_RE_REST = re.compile(r"(?:里|中|的)?(?:剩下|剩余|余下|还剩|后头|后面|后边)")


def _delta(match: re.Match[str]) -> timedelta | None:
    n = _int(match.group("n")) if match.group("n") else 0
    if n is None or (not n and not match.group("half")):
        return None
    amount = n + (0.5 if match.group("half") else 0)
    return timedelta(minutes=amount) if match.group("unit") == "分钟" else timedelta(hours=amount)


def _period(text: str, match: re.Match[str]) -> str | None:
    return None if _RE_LENGTH_BEFORE.search(text, 0, match.start()) else match.group(0)


def _clock_cn(text: str, match: re.Match[str]) -> tuple[int, int] | None:
    after = text[match.end() : match.end() + 1]
    if after == "度":
        return None  # 二十二点五度 is a temperature
    if (
        match.group("h") == "一"
        and not match.group("m")
        and (after in ("儿", "点") or text[match.start() - 1 : match.start()] in _ONE_AS_A_BIT_BEFORE)
    ):
        return None  # 高一点 / 快一点儿 mean "a bit"
    hour = _int(match.group("h"))
    if match.group("half"):
        minute = _HALF_HOUR
    else:
        minute = _QUARTERS.get(match.group("quarter") or "", _int(match.group("m")) or 0)
    return _valid_clock(hour, minute)


def _valid_clock(hour: int | None, minute: int) -> tuple[int, int] | None:
    if hour is None or not 0 <= hour <= _DAY_HOURS or not 0 <= minute < _HOUR_MINUTES:
        return None
    return hour, minute


def _resolve_hour(hour: int, kind: str | None, *, colon: bool) -> int:
    """Hour of the day (may be ≥ 24 for the next day) for a clock hour read inside a period kind."""
    if kind is None:
        return hour + _HALF_DAY if not colon and hour in _BARE_PM_HOURS else hour
    if kind == "night":
        return hour % _HALF_DAY
    if kind == "noon":
        return hour if hour >= _NOON_EARLIEST else hour + _HALF_DAY
    if kind == "pm":
        return hour + _HALF_DAY if hour < _HALF_DAY else hour
    if kind == "evening":
        if hour == _HALF_DAY or hour < _EVENING_EARLIEST:
            return hour % _HALF_DAY + _DAY_HOURS
        return hour + _HALF_DAY if hour < _HALF_DAY else hour
    return hour


def _at(day: date, tz: tzinfo | None, hours: int = 0, minutes: int = 0) -> datetime:
    return datetime.combine(day, time(), tzinfo=tz) + timedelta(hours=hours, minutes=minutes)


def _localize(now: datetime, tz: tzinfo | None) -> datetime:
    return now.replace(tzinfo=tz) if now.tzinfo is None else now.astimezone(tz)


def _find_clock(scanner: _Scanner) -> tuple[int, int, bool] | None:
    colon = scanner.take(_RE_CLOCK_COLON, lambda m: _valid_clock(int(m.group("h")), int(m.group("m"))))
    if colon is not None:
        return colon[0], colon[1], True
    chinese = scanner.take(_RE_CLOCK_CN, lambda m: _clock_cn(scanner.masked, m))
    return (chinese[0], chinese[1], False) if chinese is not None else None


@dataclass(frozen=True)
class _Parts:
    days: _Days | None
    period: str | None
    clock: tuple[int, int, bool] | None


def _range_from_parts(
    parts: _Parts, now: datetime, tz: tzinfo | None, duration: timedelta
) -> tuple[datetime, datetime, bool]:
    base = parts.days.first if parts.days else now.date()
    roll = timedelta(days=0 if parts.days else 1)  # a bare time already past today means tomorrow
    kind = _PERIODS[parts.period].kind if parts.period else None
    if parts.clock:
        hour, minute, colon = parts.clock
        start = _at(base, tz, _resolve_hour(hour, kind, colon=colon), minute)
        start = start + roll if start < now else start
        return start, start + duration, False
    if parts.period:
        window = _PERIODS[parts.period]
        start, end = _at(base, tz, window.start_hour), _at(base, tz, window.end_hour)
        return (start + roll, end + roll, False) if end <= now else (start, end, False)
    assert parts.days is not None
    return _at(parts.days.first, tz), _at(parts.days.end, tz), True


def extract_datetime(
    text: str, *, now: datetime, tz: tzinfo | None, limits: SlotLimits = DEFAULT_LIMITS
) -> TimeRange | None:
    """Resolve a Chinese date/time expression against the injected `now`.

    A bare date (or week / weekend / month) is an all-day range; a clock time starts there and lasts
    `limits.event_minutes`; a period alone (明天下午) spans that period; 两小时后 starts at now + 2h.
    """
    now = _localize(now, tz)
    scanner = _Scanner(text or "")
    delta = scanner.take(_RE_DELTA, _delta)
    if delta is not None:
        start = (now.astimezone(UTC) + delta).astimezone(tz)
        return TimeRange(start, start + limits.event_duration, scanner.matched_text(), False)
    days = _find_days(scanner, now.date())
    period = days.period if days and days.period else scanner.take(_RE_PERIOD, lambda m: _period(scanner.masked, m))
    clock = _find_clock(scanner)
    if not scanner.spans:
        return None
    parts = _Parts(days, period, clock)
    start, end, all_day = _range_from_parts(parts, now, tz, limits.event_duration)
    said = scanner.matched_text()
    if all_day and start <= now < end and _RE_REST.match(text, max(e for _, e in scanner.spans)):
        start = _at(now.date(), tz)
    if clock is not None and (until := _until(text, max(e for _, e in scanner.spans), start, tz, limits)):
        end, said = until[0], said + until[1]
    if all_day and (through := _through(text, max(e for _, e in scanner.spans), start, end, now, tz, limits)):
        end, said = through[0], said + through[1]
    return TimeRange(start, end, said, all_day)


# bounded: linear wherever it is tried; no joiner at all between two days is a run too (周一周二这两天)
_RE_THROUGH = re.compile(r"\s{0,4}(?:到|至|和|跟|与|、|~|～|-|—)?\s{0,4}")
# a bare weekday after the first day is the next one from that day on (这周一到周三: this week's Wednesday, not the
# next one from today)
_RE_BARE_WEEKDAY = re.compile(r"(?:周|星期|礼拜)[一二三四五六日天七1-7]")
_LONGEST_RUN = timedelta(days=62)


def _through(
    text: str, at: int, start: datetime, end: datetime, now: datetime, tz: tzinfo | None, limits: SlotLimits
) -> tuple[datetime, str] | None:
    """前天和昨天 / 周一到周三: a second day right after the first extends the range through it."""
    joined = _RE_THROUGH.match(text, at)
    if joined is None:
        return None
    rest = text[joined.end() :]
    since = _at(start.date(), tz) if _RE_BARE_WEEKDAY.match(rest) else now
    found = extract_datetime(rest, now=since, tz=tz, limits=limits)
    if found is None or not found.all_day or not rest.startswith(found.text):
        return None
    return (found.end, joined.group(0) + found.text) if end < found.end <= start + _LONGEST_RUN else None


_RE_UNTIL = re.compile(r"\s{0,8}(?:到|至|~|～|-|—)\s{0,8}")  # bounded: linear wherever it is tried
_LONGEST_SPAN = timedelta(hours=14)


def _until(text: str, at: int, start: datetime, tz: tzinfo | None, limits: SlotLimits) -> tuple[datetime, str] | None:
    """下午两点到四点: the clock right after `至/到` ends the range (a bare 四点 after a pm start is pm too)."""
    joined = _RE_UNTIL.match(text, at)
    if joined is None:
        return None
    rest = text[joined.end() :]
    found = extract_datetime(rest, now=_at(start.date(), tz), tz=tz, limits=limits)
    if found is None or found.all_day or not rest.startswith(found.text):
        return None
    end = found.start if found.start > start else found.start + timedelta(hours=12)
    return (end, joined.group(0) + found.text) if start < end <= start + _LONGEST_SPAN else None
