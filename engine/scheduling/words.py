"""What a planning request says in its own words: its frame (a period, a deadline), how often and how long, the part
of the day, how many sessions, and what the thing is called. Plain rules over the text; nothing is guessed here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from engine.slots import DEFAULT_LIMITS, extract_datetime, parse_chinese_number

# a number is read from the start of its run only: tried from each of its characters, a pattern goes quadratic
_N = r"(?<!\d)\d+|(?<![一二两三四五六七八九十])[一二两三四五六七八九十]+"
_RE_MINUTES = re.compile(
    rf"(?P<per>每次|每天|每晚|每早|每日|一次|一天)?[^，,。\d一二两三四五六七八九十半]{{0,3}}?"
    rf"(?:(?P<n>{_N})个?(?P<half>半)?|(?P<bare_half>半))个?(?P<unit>小时|钟头|分钟)"
)
_RE_DAILY = re.compile(r"每天|每晚|每早|每日|天天|每个晚上|每个早上|每天早上|每天晚上")
_RE_WEEKLY = re.compile(rf"(?:每周|一周|每个?星期|每个?礼拜)[^，,。\d一二两三四五六七八九十]{{0,3}}?(?P<n>{_N})次")
_RE_COUNT = re.compile(
    rf"(?P<n>{_N})(?:个|场|篇|次|章|节|回|组)(?!半|小时|钟头|月|星期|礼拜|周)(?P<what>晚上|早上|下午|上午)?"
)
_RE_LENGTH = re.compile(rf"(?:每次|一次)?(?:(?:{_N})个?半?|半)个?(?:小时|钟头|分钟)")
_RE_SOME_TIMES = re.compile(r"分几次|几次|几个晚上|几天")
_RE_NEXT_DAYS = re.compile(rf"(?:接下来|未来|之后的?|这)(?P<n>{_N})(?P<unit>周|个星期|天)")
_RE_BEFORE = re.compile(r"之前|以前|前(?!面)")
_PARTS = (
    (re.compile(r"早上|早晨|清晨|明早|每早|一早"), (time(6), time(9, 30))),
    (re.compile(r"上午"), (time(8), time(12))),
    (re.compile(r"中午"), (time(11, 30), time(13, 30))),
    (re.compile(r"下午"), (time(13), time(18))),
    (re.compile(r"晚上|今晚|明晚|每晚|夜里"), (time(18), time(23))),
)
_RE_WISH = re.compile(r"(?<!想)想(?!想|起|到|法)|打算|希望")
_RE_FIRST = re.compile(r"先(?![前后])|马上|立刻|等下|等会儿?|现在就")
_RE_TITLE_CUT = re.compile(
    r"^(?:我|一直|最近|有空的时候|有空|其实|想要|想|打算|希望|计划|准备|要|开始|试试|先|马上|等会儿|等下|就)+"
    # the last clause, from a comma (or the start) only: tried from every character it would scan to the end each time
    r"|帮我.*$|给我.*$|(?:^|(?<=[，,])|(?=，))，?(?:大概|大约|一共|总共)?[^，,]*(?:小时|钟头|分钟)$"
)
_RE_BA = re.compile(
    r"把(?P<obj>.+?)(?P<verb>写|做|看|刷|跑|整理|收拾|打扫|打包|改|列|填|回|买|洗|交|发|寄|读|处理|准备|复习|练|背|学)"
    r"(?:完|好|一下|一版|了|出来|会)*$"
)
_RE_PLAIN_CUT = re.compile(r"(?:一下|一版|吧|呢|了|的事)+$")


@dataclass(frozen=True)
class RequestWords:
    title: str
    period: tuple[datetime, datetime] | None  # the frame the user said, in their zone
    time_text: str | None
    part_of_day: tuple[time, time] | None
    daily: bool
    per_week: int | None
    sessions: int | None  # 三场 / 两篇 / 三个晚上 / 分几次 (a few: None, but `several`)
    several: bool
    session_minutes: int | None
    total_minutes: int | None
    wish: bool  # 我想 / 打算 / 一直想
    first_step: bool  # 先 / 马上 / 等下: one step to take now


def _number(text: str | None) -> int | None:
    if not text:
        return None
    value = parse_chinese_number(text)
    return int(value) if value is not None else None


def _minutes(text: str) -> tuple[int | None, int | None]:
    """(per session, total) minutes the text names; a 每次/每天 before the length makes it per session."""
    match = _RE_MINUTES.search(text)
    if match is None:
        return None, None
    n = 0 if match.group("bare_half") else (_number(match.group("n")) or 0)
    value = n + (0.5 if match.group("half") or match.group("bare_half") else 0)
    minutes = round(value * (60 if match.group("unit") != "分钟" else 1))
    if minutes <= 0:
        return None, None
    per = match.group("per") or _RE_DAILY.search(text) or _RE_WEEKLY.search(text)
    return (minutes, None) if per else (None, minutes)


def _period(text: str, now: datetime) -> tuple[tuple[datetime, datetime] | None, str | None]:
    tz = now.tzinfo
    midnight = datetime.combine(now.date(), time(), tzinfo=tz)
    ahead = _RE_NEXT_DAYS.search(text)
    if ahead:
        n = _number(ahead.group("n")) or 1
        days = n if ahead.group("unit") == "天" else 7 * n
        return (midnight, midnight + timedelta(days=days)), ahead.group(0)
    found = extract_datetime(text, now=now, tz=tz, limits=DEFAULT_LIMITS)
    if found is None:
        return None, None
    start, end = found.start, found.end
    after = text[text.find(found.text) + len(found.text) :] if found.text in text else ""
    if _RE_BEFORE.match(after):  # 周五之前: from now until that day ends
        return (midnight, end), found.text
    day = datetime.combine(start.date(), time(), tzinfo=tz)
    if end - start <= timedelta(days=1) and (after.startswith("开始") or _RE_DAILY.search(text)):
        return (day, day + timedelta(days=7)), found.text  # 明天开始…, 下周每天早上…: a week from that day
    last = end.date() if end.timetz().replace(tzinfo=None) == time() else end.date() + timedelta(days=1)
    return (day, datetime.combine(last, time(), tzinfo=tz)), found.text  # whole days: the part of day is apart


def read(text: str, now: datetime) -> RequestWords:
    """The request's words at `now` (aware, in the user's zone)."""
    text = text.strip()
    period, time_text = _period(text, now)
    per_session, total = _minutes(text)
    weekly = _RE_WEEKLY.search(text)
    per_week = _number(weekly.group("n")) if weekly else None
    count = _RE_COUNT.search(_RE_WEEKLY.sub(" ", text))
    sessions = _number(count.group("n")) if count else None
    part = next((hours for pattern, hours in _PARTS if pattern.search(text)), None)
    return RequestWords(
        title=title_of(text, time_text),
        period=period,
        time_text=time_text,
        part_of_day=part,
        daily=bool(_RE_DAILY.search(text)),
        per_week=per_week,
        sessions=sessions if sessions and sessions <= 14 else None,
        several=bool(_RE_SOME_TIMES.search(text)),
        session_minutes=per_session,
        total_minutes=total,
        wish=bool(_RE_WISH.search(text)),
        first_step=bool(_RE_FIRST.search(text)),
    )


def title_of(text: str, time_text: str | None) -> str:
    """What the thing is called, in the user's words: the clause without its time, frequency and wish words;
    把 X 收拾一下 reads 收拾X."""
    clauses = [c for c in re.split(r"[，,。！!？?；;]", text) if c.strip()]
    main = max(clauses, key=lambda c: len(_strip(c, time_text)), default=text)
    words = _strip(main, time_text)
    ba = _RE_BA.search(words)
    if ba:
        words = ba.group("verb") + ba.group("obj")
    words = _RE_PLAIN_CUT.sub("", words).strip()
    return (words or text.strip())[:60]


def _strip(clause: str, time_text: str | None) -> str:
    words = clause.replace(time_text, "") if time_text else clause
    words = _RE_LENGTH.sub("", _RE_NEXT_DAYS.sub("", words))
    words = re.sub(rf"每周|一周|每个?星期|每个?礼拜|(?:{_N})次", "", words)
    words = re.sub(
        r"这周末|这周|下周|下个星期|这个月|月底|每天|每晚|每早|天天|每次|早上|上午|下午|晚上|今晚|明晚|明早"
        r"|之前|以前|开始|抽|分几次|几个晚上|大概|大约",
        "",
        words,
    )
    words = _RE_COUNT.sub("", words) if _RE_COUNT.fullmatch(words) is None else words
    previous = None
    while previous != words:
        previous, words = words, _RE_TITLE_CUT.sub("", words).strip()
    return words
