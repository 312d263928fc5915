"""What a long-goal request says in its own words: the deadline (a span, a month, the year's end), the hours a week,
the current level and the goal's title."""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

from engine.agents.text import at_day_end
from engine.slots import before_holiday, extract_datetime, parse_chinese_number

MIN_WEEKLY_HOURS = 0.5  # two sessions of a quarter hour a week
MAX_WEEKLY_HOURS = 7 * 24
_NUM = r"\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百]+"
# _NUM where a match may begin: never inside a run of digits or numerals (a match there is a match one character
# earlier, so nothing is lost), which keeps a long run from being tried at each of its characters (quadratic)
_NUM_FIRST = r"(?<!\d)\d+(?:\.\d+)?|(?<![零〇一二两三四五六七八九十百])[零〇一二两三四五六七八九十百]+"
_SMALL = r"(?<![\d零一二两三四五六七八九十])(?:\d{1,2}|[一二两三四五六七八九十]+|半)"
_RE_SPAN = re.compile(
    rf"(?P<n>{_SMALL})(?P<unit>个月|个星期|个礼拜|年(?![\d一二三四五六七八九十底末初])|周|天"
    r"|月(?=内|以内|之内|后|以后|之后))(?:内|以内|之内|后|以后|之后)?"
)
_RE_MONTH = re.compile(
    rf"(?P<y>明年|今年|后年|\d{{4}}年)?(?P<m>\d{{1,2}}|(?<![一二三四五六七八九十])[一二三四五六七八九十]+)月份?"
    rf"(?:(?P<d>{_NUM})[日号])?(?P<edge>底|末|初|中)?(?P<before>之前|以前|前)?"
)
# 年终 is a deadline only as one (年终前); 年终总结 is a thing
_RE_YEAR_END = re.compile(r"(?P<y>明年|今年|后年)?(?:年底|年末|年终(?=之前|以前|前))(?:之前|以前|前)?")
_YEARS = {"今年": 0, "明年": 1, "后年": 2}
_RE_HOURS = re.compile(
    rf"(?P<per>工作日每天|每个星期|每个礼拜|每星期|每礼拜|每周|一周|每天|一天|每日|每晚|天天)?"
    rf"[^\d零一二两三四五六七八九十半，,。；;]{{0,4}}?(?P<n>{_NUM_FIRST})?个?(?P<half>半)?个?"
    r"(?P<unit>小时|钟头|分钟)"
)
_DAYS_PER = {"工作日每天": 5, "每天": 7, "一天": 7, "每日": 7, "每晚": 7, "天天": 7}
_RE_BARE_NUMBER = re.compile(rf"(?:大概|大约|差不多|能有)?(?P<n>{_NUM})(?:个)?(?:小时)?(?:左右)?")
RE_LEVEL = re.compile(r"零基础|没有?(?:任何)?基础|有(?:一点|一些|一定的?)基础|学过一点|初学者?|新手")
_RE_GOAL_CUT = re.compile(r"帮我|给我|替我|帮忙|请你|拆|分解|分阶段|规划|制定|怎么|如何|做个|做一个")
_RE_GOAL_LEAD = re.compile(
    r"^(?:我|想要|想|要|得|打算|准备|计划|希望|在|把|争取|内|以内|之内|这个|将|今年|明年|后年|一下)+"
)
_RE_GOAL_TAIL = re.compile(r"(?:这个目标|这件事|这个|的|吧|呢)+$")
_RE_CLAUSE = re.compile(r"[，,。！!？?；;：:\s]+")


def _add_months(moment: datetime, months: int) -> datetime:
    years, index = divmod(moment.month - 1 + months, 12)
    year, month = moment.year + years, index + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def _span_deadline(match: re.Match[str], now: datetime) -> datetime:
    n = 0.5 if match.group("n") == "半" else float(parse_chinese_number(match.group("n")) or 0)
    unit = match.group("unit")
    if unit.startswith("年"):
        return _add_months(now, round(n * 12))
    if "月" in unit:
        return _add_months(now, int(n)) + timedelta(days=15 if n % 1 else 0)  # 半个月 is about 15 days
    return now + timedelta(days=n * (7 if unit in ("周", "个星期", "个礼拜") else 1))


def _month_day(match: re.Match[str], year: int) -> date | None:
    month = parse_chinese_number(match.group("m"))
    if not isinstance(month, int) or not 1 <= month <= 12:
        return None
    last = calendar.monthrange(year, month)[1]
    if match.group("d"):
        day = parse_chinese_number(match.group("d"))
        return date(year, month, day) if isinstance(day, int) and 1 <= day <= last else None
    if match.group("edge") in ("初", "中"):
        return date(year, month, 1 if match.group("edge") == "初" else 15)
    if match.group("before") and not match.group("edge"):
        return date(year, month, 1) - timedelta(days=1)  # 三月前: by the end of February
    return date(year, month, last)


def _month_deadline(match: re.Match[str], today: date) -> date | None:
    said = match.group("y")
    if said:
        return _month_day(match, today.year + _YEARS[said] if said in _YEARS else int(said[:4]))
    found = _month_day(match, today.year)
    # an unqualified month already past (三月 said in December) is next year's
    return _month_day(match, today.year + 1) if found and found < today else found


def find_deadline(text: str, now: datetime) -> tuple[datetime, str] | None:
    """(deadline, the words that said it): 三个月/半年内 from `now`, 明年三月前/年底/2027年3月1日 at that day's end;
    None when the text says no deadline after `now`."""
    found = _deadline_words(text, now)
    return found if found is not None and found[0] > now else None


def _deadline_words(text: str, now: datetime) -> tuple[datetime, str] | None:
    tz = now.tzinfo
    if year_end := _RE_YEAR_END.search(text):
        return at_day_end(date(now.year + _YEARS[year_end.group("y") or "今年"], 12, 31), tz), year_end.group(0)
    month = _RE_MONTH.search(text)
    if month and (day := _month_deadline(month, now.date())):
        return at_day_end(day, tz), month.group(0)
    if span := _RE_SPAN.search(text):
        return _span_deadline(span, now), span.group(0)
    found = extract_datetime(text, now=now, tz=tz)
    if found is None:
        return None
    if found.all_day:  # a day or a period (这周, 这个月): by the end of its last day
        last = (found.end - timedelta(microseconds=1)).date()
        if before_holiday(text):
            last -= timedelta(days=1)
        return at_day_end(last, tz), found.text
    return found.start, found.text


def find_weekly_hours(text: str, *, bare: bool) -> tuple[float, str] | None:
    """(hours per week, the words that said it): 每周五小时 → 5, 一天一小时 → 7, 工作日每天两小时 → 10; with
    `bare`, a number alone (10, 十个小时) is per week too. None outside [0.5, 168]."""
    match = _RE_HOURS.search(text)
    if match and (match.group("per") or bare):
        amount = float(parse_chinese_number(match.group("n")) or 0) if match.group("n") else 0.0
        amount += 0.5 if match.group("half") else 0
        amount /= 60 if match.group("unit") == "分钟" else 1
        amount *= _DAYS_PER.get(match.group("per") or "", 1)
        said = match.group(0)
    elif bare and (number := _RE_BARE_NUMBER.fullmatch(text.strip())):
        amount, said = float(parse_chinese_number(number.group("n")) or 0), number.group(0)
    else:
        return None
    return (round(amount, 1), said) if MIN_WEEKLY_HOURS <= amount <= MAX_WEEKLY_HOURS else None


def tidy(hours: float) -> float | int:
    return int(hours) if float(hours).is_integer() else hours


def goal_title(text: str) -> str | None:
    for clause in _RE_CLAUSE.split(text):
        # the goal is said before the request words (…，帮我拆一下) or between them (帮我把…拆成计划)
        for part in _RE_GOAL_CUT.split(clause):
            title = _RE_GOAL_TAIL.sub("", _RE_GOAL_LEAD.sub("", part))
            if title:
                return title[:200]
    return None
