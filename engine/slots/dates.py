"""Chinese date expressions (明天, 下周三, 3月5号, 月底, 三天后) resolved to day ranges."""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial

from engine.slots.numbers import _CN_DIGITS, _INT, _INT_FIRST, _int
from engine.slots.scanner import _Scanner

_DAY_WORDS = {
    "大前天": (-3, None),
    "前天": (-2, None),
    "昨天": (-1, None),
    "昨日": (-1, None),
    "昨晚": (-1, "晚上"),
    "今天": (0, None),
    "今儿": (0, None),
    "明儿": (1, None),
    "昨儿": (-1, None),
    "今日": (0, None),
    "今晚": (0, "晚上"),
    "今早": (0, "早上"),
    "今夜": (0, "晚上"),
    "明天": (1, None),
    "明日": (1, None),
    "明晚": (1, "晚上"),
    "明早": (1, "早上"),
    "后天": (2, None),
    "大后天": (3, None),
}
_WEEK_OFFSETS = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_MONTH_OFFSETS = {"上": -1, "这": 0, "本": 0, "下": 1}
_WEEKDAYS = {
    "一": 0,
    "二": 1,
    "三": 2,
    "四": 3,
    "五": 4,
    "六": 5,
    "日": 6,
    "天": 6,
    "七": 6,
    "1": 0,
    "2": 1,
    "3": 2,
    "4": 3,
    "5": 4,
    "6": 5,
    "7": 6,
}
_SATURDAY = 5
_DAYS_PER_WEEK = 7
# 明儿 / 今儿 are days, but not inside 聪明儿童 / 如今儿子
_DAY_WORD_GUARDS = {"明儿": "(?<![聪说证发表透光高精英照文分鲜黎清])", "今儿": "(?<![如至现古而迄])"}
_RE_DAY_WORD = re.compile(
    "|".join(_DAY_WORD_GUARDS.get(word, "") + word for word in sorted(_DAY_WORDS, key=len, reverse=True))
)
_RE_DAYS_LATER = re.compile(rf"(?P<n>{_INT_FIRST})个?(?P<unit>天|日|周|星期|礼拜|月)(?P<dir>以后|之后|后|以前|之前|前)")
# a run of days from today: 未来三天 / 接下来一周 ahead, 最近三天 / 过去一周 back to today (today included)
_RE_DAY_RUN = re.compile(
    rf"(?P<dir>未来|接下来|今后|往后|最近|近|过去)的?(?P<n>{_INT_FIRST})个?(?P<unit>天|日|周|星期|礼拜)(?!后|以后|之后|前|以前|之前)"
)
_RE_ISO_DATE = re.compile(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)")
_RE_MONTH_DAY = re.compile(rf"(?:(?P<y>\d{{4}}|[{_CN_DIGITS}]{{4}})年)?(?P<m>{_INT_FIRST})月(?P<d>{_INT})[日号]?")
# 一下 is a verb's particle, not 下 of a week or month: 约一下周五 is this Friday, 看一下下周 next week
_NEXT = "(?<!一)下"
_RE_MONTH_REL = re.compile(rf"(?P<rel>上|{_NEXT}|这|本)个?月(?:(?P<d>{_INT})[号日]|(?P<edge>底|末|初))?")
# 八月份 / 2027年3月份 / 去年十二月份: the whole month (a bare 八月 is left alone: 八月十号, 三月内)
_RE_MONTH_NAME = re.compile(rf"(?P<y>\d{{4}}年|今年|去年|明年)?(?P<m>{_INT_FIRST})月份")
_YEAR_WORDS = {"今年": 0, "去年": -1, "明年": 1}
_RE_MONTH_EDGE = re.compile(r"月(?P<edge>底|末|初)")
_RE_WEEKEND = re.compile(rf"(?P<rel>上|{_NEXT}|这|本)?个?周末")
# 这一周 / 这一个星期 are 这周; 一周 alone is a length, not a date
_RE_WEEK = re.compile(
    rf"(?P<rel>上上|{_NEXT}下|上|{_NEXT}|这|本)?(?P<one>一(?=个?(?:周|星期|礼拜)))?(?P<ge>个)?(?:周|星期|礼拜)(?!末)"
    r"(?P<d>[一二三四五六日天七1-7](?!气))?"
)
# fixed-date holidays, the next one (today included): 五一之前, 国庆前后; lunar ones (春节, 中秋) need a calendar
_HOLIDAYS = {
    "元旦": (1, 1),
    "情人节": (2, 14),
    "妇女节": (3, 8),
    "劳动节": (5, 1),
    "五一": (5, 1),
    "儿童节": (6, 1),
    "六一": (6, 1),
    "教师节": (9, 10),
    "国庆": (10, 1),
    "十一假期": (10, 1),
    "十一长假": (10, 1),
    "圣诞": (12, 25),
    "平安夜": (12, 24),
}
RE_HOLIDAY = re.compile(
    r"(?<![周期拜\d零〇一二两三四五六七八九十])(?:"
    + "|".join(sorted(map(re.escape, _HOLIDAYS), key=len, reverse=True))
    + r")(?:节|假期|长假|假)?(?![路号点楼栋])"
)
_RE_DAY_OF_MONTH = re.compile(rf"(?<![月\d{_CN_DIGITS}十])(?P<d>{_INT})[号日](?!线)")


@dataclass(frozen=True)
class _Days:
    first: date
    end: date  # exclusive
    period: str | None = None


def _shift_months(day: date, months: int) -> date:
    years, month_index = divmod(day.month - 1 + months, 12)
    year, month = day.year + years, month_index + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _month_start(day: date, months: int = 0) -> date:
    return _shift_months(day.replace(day=1), months)


def _safe_date(year: int, month: int | None, day: int | None) -> date | None:
    try:
        return date(year, month or 0, day or 0)
    except ValueError:
        return None


def _one_day(day: date | None, period: str | None = None) -> _Days | None:
    return _Days(day, day + timedelta(days=1), period) if day else None


def _day_word(today: date, match: re.Match[str]) -> _Days | None:
    offset, period = _DAY_WORDS[match.group(0)]
    return _one_day(today + timedelta(days=offset), period)


def _days_later(today: date, match: re.Match[str]) -> _Days | None:
    n = _int(match.group("n"))
    if n is None:
        return None
    sign = -1 if "前" in match.group("dir") else 1
    unit = match.group("unit")
    if unit == "月":
        return _one_day(_shift_months(today, sign * n))
    days = n * (_DAYS_PER_WEEK if unit in ("周", "星期", "礼拜") else 1)
    return _one_day(today + timedelta(days=sign * days))


def _day_run(today: date, match: re.Match[str]) -> _Days | None:
    n = _int(match.group("n"))
    if not n:
        return None
    days = n * (_DAYS_PER_WEEK if match.group("unit") in ("周", "星期", "礼拜") else 1)
    if match.group("dir") in ("最近", "近", "过去"):
        return _Days(today - timedelta(days=days - 1), today + timedelta(days=1))
    return _Days(today, today + timedelta(days=days))


def _iso_date(today: date, match: re.Match[str]) -> _Days | None:
    return _one_day(_safe_date(int(match.group("y")), _int(match.group("m")), _int(match.group("d"))))


def _month_day(today: date, match: re.Match[str]) -> _Days | None:
    month, day = _int(match.group("m")), _int(match.group("d"))
    if match.group("y"):
        return _one_day(_safe_date(_int(match.group("y")) or 0, month, day))
    candidate = _safe_date(today.year, month, day)
    if candidate and candidate < today:  # an unqualified past date means next year's
        candidate = _safe_date(today.year + 1, month, day)
    return _one_day(candidate)


def _month_edge(first: date, edge: str) -> _Days | None:
    if edge == "初":
        return _one_day(first)
    return _one_day(_month_start(first, 1) - timedelta(days=1))


def _month_relative(today: date, match: re.Match[str]) -> _Days | None:
    first = _month_start(today, _MONTH_OFFSETS[match.group("rel")])
    if match.group("d"):
        return _one_day(_safe_date(first.year, first.month, _int(match.group("d"))))
    if match.group("edge"):
        return _month_edge(first, match.group("edge"))
    return _Days(first, _month_start(first, 1))


def _month_name(today: date, match: re.Match[str]) -> _Days | None:
    said = match.group("y")
    year = today.year + _YEAR_WORDS[said] if said in _YEAR_WORDS else int(said[:4]) if said else today.year
    first = _safe_date(year, _int(match.group("m")), 1)
    return _Days(first, _month_start(first, 1)) if first else None


def _month_edge_bare(today: date, match: re.Match[str]) -> _Days | None:
    edge = match.group("edge")
    past_start = edge == "初" and today.day > 1
    return _month_edge(_month_start(today, 1 if past_start else 0), edge)


def _week_monday(today: date, offset: int) -> date:
    return today - timedelta(days=today.weekday()) + timedelta(weeks=offset)


def _weekend(today: date, match: re.Match[str]) -> _Days | None:
    saturday = _week_monday(today, _WEEK_OFFSETS[match.group("rel") or "这"]) + timedelta(days=_SATURDAY)
    return _Days(saturday, saturday + timedelta(days=2))


def before_holiday(text: str) -> bool:
    """Whether `text` says something is due before a holiday (五一之前): done by the day before it begins, where
    before a date (3月1号之前) includes the date."""
    return re.search(RE_HOLIDAY.pattern + r"(?:之前|以前|前)", text) is not None


def _holiday(today: date, match: re.Match[str]) -> _Days | None:
    word = next(w for w in sorted(_HOLIDAYS, key=len, reverse=True) if match.group(0).startswith(w))
    month, day = _HOLIDAYS[word]
    candidate = _safe_date(today.year, month, day)
    if candidate and candidate < today:
        candidate = _safe_date(today.year + 1, month, day)
    return _one_day(candidate)


def _week(today: date, match: re.Match[str]) -> _Days | None:
    rel, weekday = match.group("rel"), match.group("d")
    if rel is None and (weekday is None or match.group("ge") or match.group("one")):
        return None  # 周围 / 一个星期 / 一周 are not dates
    if weekday is None:
        monday = _week_monday(today, _WEEK_OFFSETS[rel])
        return _Days(monday, monday + timedelta(weeks=1))
    day = _week_monday(today, _WEEK_OFFSETS[rel] if rel else 0) + timedelta(days=_WEEKDAYS[weekday])
    if rel is None and day < today:  # a bare 周一 is the next one, today included
        day += timedelta(weeks=1)
    return _one_day(day)


def _day_of_month(today: date, match: re.Match[str]) -> _Days | None:
    day_number = _int(match.group("d"))
    candidate = _safe_date(today.year, today.month, day_number)
    if candidate is None or candidate < today:
        following = _month_start(today, 1)
        candidate = _safe_date(following.year, following.month, day_number)
    return _one_day(candidate)


_DATE_RULES: tuple[tuple[re.Pattern[str], Callable[[date, re.Match[str]], _Days | None]], ...] = (
    (_RE_DAY_RUN, _day_run),
    (_RE_DAYS_LATER, _days_later),
    (_RE_DAY_WORD, _day_word),
    (_RE_ISO_DATE, _iso_date),
    (_RE_MONTH_REL, _month_relative),
    (_RE_MONTH_DAY, _month_day),
    (_RE_MONTH_NAME, _month_name),
    (_RE_MONTH_EDGE, _month_edge_bare),
    (RE_HOLIDAY, _holiday),
    (_RE_WEEKEND, _weekend),
    (_RE_WEEK, _week),
    (_RE_DAY_OF_MONTH, _day_of_month),
)


# the rules that name a day outright (明天, 下周一, 11月3号), not a word that may be a thing's (3号楼, 中秋节的月饼)
_SAID_DAY = frozenset({_RE_DAY_RUN, _RE_DAYS_LATER, _RE_DAY_WORD, _RE_ISO_DATE, _RE_MONTH_REL, _RE_MONTH_DAY})
_SAID_DAY |= {_RE_WEEKEND, _RE_WEEK}
_RE_CLAUSE_BREAK = re.compile(r"[，,。！!？?；;]")


def _find_days(scanner: _Scanner, today: date) -> _Days | None:
    """The days the first rule in order finds, unless a day named outright in an earlier clause comes first: that
    one is the time (挪到周四晚上吧，明天要加班: 明天 is the reason's)."""
    found = [(hit, pattern) for pattern, rule in _DATE_RULES if (hit := scanner.first(pattern, partial(rule, today)))]
    if not found:
        return None
    (span, days), _ = found[0]
    for (start, end), earlier in (hit for hit, pattern in found[1:] if pattern in _SAID_DAY):
        if end <= span[0] and _RE_CLAUSE_BREAK.search(scanner.text, end, span[0]):
            span, days = (start, end), earlier
    scanner.mask(span)
    return days
