"""Rule-based Chinese slot extractors: numbers, temperatures, order ids, destinations and date/time ranges."""
from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import Protocol, TypeVar
from zoneinfo import ZoneInfo

__all__ = [
    "DEFAULT_LIMITS",
    "SlotLimits",
    "SlotSpecLike",
    "TimeRange",
    "extract_datetime",
    "extract_destination",
    "extract_order_id",
    "extract_slots",
    "extract_temperature",
    "parse_chinese_number",
    "validate_temperature",
]

Number = int | float
_T = TypeVar("_T")


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class SlotLimits:
    """Tunable bounds used by the extractors and validators."""

    temperature_min: float = 16
    temperature_max: float = 32
    order_id_min_length: int = 4
    event_minutes: int = 60

    def __post_init__(self) -> None:
        if self.temperature_min > self.temperature_max:
            raise ValueError("temperature_min must not exceed temperature_max")
        if self.order_id_min_length < 1 or self.event_minutes < 1:
            raise ValueError("order_id_min_length and event_minutes must be positive")

    @property
    def event_duration(self) -> timedelta:
        return timedelta(minutes=self.event_minutes)


DEFAULT_LIMITS = SlotLimits()


class SlotSpecLike(Protocol):
    name: str
    type: str


# --------------------------------------------------------------------------- numbers

_DIGIT_VALUES = {"零": 0, "〇": 0, "幺": 1, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
                 "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_ZEROS = "零〇"

_CN_DIGITS = "零〇一二两三四五六七八九"
_CN_INT = rf"[{_CN_DIGITS}十][{_CN_DIGITS}十百千万亿]*"
_CN_NUM = rf"{_CN_INT}(?:点[{_CN_DIGITS}]+)?"
_AR_NUM = r"\d+(?:\.\d+)?"
_NUM = rf"(?:{_AR_NUM}|{_CN_NUM})"
_INT = rf"(?:\d{{1,4}}|{_CN_INT})"
_NUMBER_RE = re.compile(rf"(?P<num>{_NUM})(?P<half>[个点度]?半)?")
# A lone 一 in these words means "a / a bit", not the number one.
_FILLER_AFTER_ONE = set("下些起样直定般会切旦边共同致点")


def _tidy(value: Number) -> Number:
    """Return an int for integral floats so 22.0 reads as 22."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _cn_digit_string(token: str) -> str:
    return "".join(str(_DIGIT_VALUES[c]) for c in token)


def _cn_int(token: str) -> int | None:
    """Chinese integer: 十八, 一百零五, 两万三 (=23000), 二零二六 (digit by digit)."""
    if not token:
        return None
    if all(c in _DIGIT_VALUES for c in token):
        return int(_cn_digit_string(token))
    total = section = digit = last_unit = 0
    for char in token:
        if char in _DIGIT_VALUES:
            digit = _DIGIT_VALUES[char]
        elif char in _SMALL_UNITS:
            last_unit = _SMALL_UNITS[char]
            section += (digit or 1) * last_unit
            digit = 0
        elif char in _BIG_UNITS:
            last_unit = _BIG_UNITS[char]
            total += ((section + digit) or 1) * last_unit
            section = digit = 0
        else:
            return None
    abbreviated = digit and last_unit >= 100 and token[-2] not in _ZEROS and token[-2] not in _DIGIT_VALUES
    if abbreviated:  # 一百五 = 150, 两千三 = 2300
        digit *= last_unit // 10
    return total + section + digit


def _number_token(token: str) -> Number | None:
    """Parse one Arabic or Chinese number token, decimals included (二十二点五)."""
    if token[0].isdigit():
        return _tidy(float(token)) if "." in token else int(token)
    whole, _, fraction = token.partition("点")
    integer = _cn_int(whole)
    if integer is None:
        return None
    if not fraction:
        return integer
    return _tidy(float(f"{integer}.{_cn_digit_string(fraction)}"))


def _is_filler_one(text: str, match: re.Match[str]) -> bool:
    return match.group(0) == "一" and text[match.end():match.end() + 1] in _FILLER_AFTER_ONE


def _match_value(match: re.Match[str]) -> Number | None:
    value = _number_token(match.group("num"))
    if value is not None and match.group("half"):
        value = _tidy(value + 0.5)
    return value


def parse_chinese_number(text: str) -> Number | None:
    """First number in `text`, Arabic or Chinese: 二十二点五 → 22.5, 二十六度半 → 26.5, 两 → 2."""
    for match in _NUMBER_RE.finditer(text or ""):
        if _is_filler_one(text, match):
            continue
        value = _match_value(match)
        if value is not None:
            return value
    return None


# --------------------------------------------------------------------------- temperature

_TEMP_WITH_UNIT = re.compile(rf"(?P<num>{_NUM})(?:摄氏度|度|℃|°C|°)(?P<half>半)?")
_TEMP_SET_VERB = re.compile(
    rf"(?:调到|调成|调至|调为|设成|设为|设到|设置为|设置成|设置到|设在|定在|开到|开成|打到|温度(?:是|为)?|空调)"
    rf"\s*(?P<num>{_NUM})(?P<half>半)?"
)
_TEMP_CONTEXT = re.compile(r"温度|空调|冷气|暖气|制冷|制热|℃")
_TEMP_OTHER_DEVICE = re.compile(r"风量|风速|音量|声音|亮度|档位|座椅|车窗")
_TEMP_TARGET_BEFORE = re.compile(r"(?:到|成|为|至|在)\s*$")
_TEMP_RELATIVE_BEFORE = re.compile(r"(?:高|低|升|降|加|减|多|少|上调|下调)了?\s*$")
_NOT_TEMP_AFTER = set("点小分个档级号月日天年岁秒%")


@dataclass(frozen=True)
class _TempCandidate:
    value: Number
    position: int
    targeted: bool


def _temp_candidate(text: str, match: re.Match[str]) -> _TempCandidate | None:
    before = text[:match.start("num")]
    if _TEMP_RELATIVE_BEFORE.search(before):
        return None
    value = _match_value(match)
    if value is None:
        return None
    return _TempCandidate(value, match.start("num"), bool(_TEMP_TARGET_BEFORE.search(before)))


def _temp_candidates(text: str) -> list[_TempCandidate]:
    found = [_temp_candidate(text, m) for m in _TEMP_WITH_UNIT.finditer(text)]
    if _TEMP_CONTEXT.search(text) and not _TEMP_OTHER_DEVICE.search(text):
        for match in _TEMP_SET_VERB.finditer(text):
            if text[match.end():match.end() + 1] not in _NOT_TEMP_AFTER:
                found.append(_temp_candidate(text, match))
    unique: dict[int, _TempCandidate] = {}
    for candidate in found:
        if candidate is not None:
            unique.setdefault(candidate.position, candidate)  # the unit pattern (度半) wins
    return list(unique.values())


def validate_temperature(value: Number | None, limits: SlotLimits = DEFAULT_LIMITS) -> bool:
    """True when `value` is a settable cabin temperature within `limits`."""
    return value is not None and limits.temperature_min <= value <= limits.temperature_max


def extract_temperature(text: str, limits: SlotLimits = DEFAULT_LIMITS) -> Number | None:
    """Absolute target temperature (调到二十二度 → 22); relative phrases (调高两度, 高一点) give None.

    Out-of-range values are still returned (check with `validate_temperature`); `limits` only breaks
    ties when several temperatures are mentioned: a value after 到/成/为 wins, then an in-range one.
    """
    candidates = _temp_candidates(text or "")
    if not candidates:
        return None
    def rank(candidate: _TempCandidate) -> tuple[bool, bool, int]:
        return not candidate.targeted, not validate_temperature(candidate.value, limits), candidate.position

    return min(candidates, key=rank).value


# --------------------------------------------------------------------------- order id

_ORDER_KEYWORD = r"(?:订单编号|订单号码|快递单号|运单号|订单号|单号|订单|编号)"
_ORDER_AFTER_KEYWORD = re.compile(
    _ORDER_KEYWORD
    + r"\s*(?:是|为|：|:)?\s*(?:(?P<cn>[零〇幺一二三四五六七八九]{4,})"
    + r"|(?P<id>[A-Za-z0-9](?:[A-Za-z0-9-]|\s+(?=[A-Za-z0-9]))*))"
)
_ORDER_TAIL = re.compile(r"(?<!手机)(?<!电话)尾号(?:是|为)?\s*(?P<id>\d+)")
_ORDER_BARE = re.compile(r"(?<![A-Za-z0-9-])(?P<id>[A-Za-z]{1,4}-?\d+(?:-\d+)*)(?![A-Za-z0-9-])")
_NOT_ORDER_AFTER = set("度点分时号月日年:：")


def _normalize_order_id(raw: str) -> str:
    return re.sub(r"\s+", "", raw).strip("-").upper()


def _order_id_ok(order_id: str, limits: SlotLimits) -> bool:
    alnum = [c for c in order_id if c.isalnum()]
    return len(alnum) >= limits.order_id_min_length and any(c.isdigit() for c in alnum)


def _order_from_match(text: str, match: re.Match[str], limits: SlotLimits) -> str | None:
    if text[match.end():match.end() + 1] in _NOT_ORDER_AFTER:
        return None
    groups = match.groupdict()
    raw = _cn_digit_string(groups["cn"]) if groups.get("cn") else groups["id"]
    order_id = _normalize_order_id(raw)
    return order_id if _order_id_ok(order_id, limits) else None


def extract_order_id(text: str, limits: SlotLimits = DEFAULT_LIMITS) -> str | None:
    """Order id after 订单/单号/尾号 (spaces removed, upper-cased), else a bare letter+digit code like A12345.

    Pure digit strings are only taken after a keyword, so phone numbers and times are not mistaken for ids.
    """
    text = text or ""
    for pattern in (_ORDER_AFTER_KEYWORD, _ORDER_TAIL, _ORDER_BARE):
        for match in pattern.finditer(text):
            order_id = _order_from_match(text, match, limits)
            if order_id:
                return order_id
    return None


# --------------------------------------------------------------------------- destination

_DEST_TRIGGER = re.compile(
    r"导航(?:一下)?(?:去往|前往|去到|去|到|至|回)"
    r"|(?:带我|载我|送我|开车|驾车|我要|我想|我得|我们|咱们)?(?:去往|前往|开往|回到|去到|去|到|回)"
)
_DEST_CLAUSE_END = re.compile(r"[，。,.!！?？;；、]")
_DEST_STOP = re.compile(
    r"怎么走|怎么去|怎么过去|怎么到|如何走|的路线|路线|的路|要多久|多久|多远|还有多|远不远|在哪"
    r"|不走高速|不要高速|不上高速|避开|避免|走高速|顺便|然后"
)
_DEST_TRAILING = re.compile(r"(?:吧|呀|啊|哦|呢|嘛|了|啦|一下|一趟)+$")
_DEST_LEADING = re.compile(r"^(?:一下|一趟)+")
_DEST_REJECT = {"去", "来", "这", "那", "这里", "那里", "哪", "哪里", "哪儿", "这儿", "那儿"}


def _clean_destination(raw: str) -> str | None:
    clause = _DEST_CLAUSE_END.split(raw.strip(), maxsplit=1)[0]
    stop = _DEST_STOP.search(clause)
    if stop:
        clause = clause[:stop.start()]
    clause = _DEST_LEADING.sub("", _DEST_TRAILING.sub("", clause.strip())).strip()
    return clause if clause and clause not in _DEST_REJECT else None


def extract_destination(text: str) -> str | None:
    """Place after 导航去/带我去/去/回...: 去人民广场怎么走 → 人民广场, 开车回家 → 家."""
    text = text or ""
    for match in _DEST_TRIGGER.finditer(text):
        destination = _clean_destination(text[match.end():])
        if destination:
            return destination
    return None


# --------------------------------------------------------------------------- datetime


@dataclass(frozen=True)
class TimeRange:
    """A resolved time expression; `end` is exclusive, both tz-aware in the user's zone."""

    start: datetime
    end: datetime
    text: str
    all_day: bool

    def to_dict(self) -> dict[str, object]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "text": self.text,
                "all_day": self.all_day}


@dataclass(frozen=True)
class _Period:
    start_hour: int
    end_hour: int
    kind: str  # how a bare clock hour is read inside this period: am / pm / noon / night / evening


_PERIODS = {
    "凌晨": _Period(0, 6, "night"), "半夜": _Period(0, 6, "night"),
    "清晨": _Period(5, 8, "am"), "早上": _Period(6, 9, "am"), "早晨": _Period(6, 9, "am"),
    "上午": _Period(8, 12, "am"), "中午": _Period(11, 14, "noon"),
    "下午": _Period(13, 18, "pm"), "傍晚": _Period(17, 19, "pm"),
    "晚上": _Period(18, 24, "evening"), "夜里": _Period(18, 24, "evening"),
    "夜间": _Period(18, 24, "evening"), "深夜": _Period(22, 24, "evening"),
}
_DAY_WORDS = {
    "大前天": (-3, None), "前天": (-2, None), "昨天": (-1, None), "昨日": (-1, None), "昨晚": (-1, "晚上"),
    "今天": (0, None), "今日": (0, None), "今晚": (0, "晚上"), "今早": (0, "早上"), "今夜": (0, "晚上"),
    "明天": (1, None), "明日": (1, None), "明晚": (1, "晚上"), "明早": (1, "早上"),
    "后天": (2, None), "大后天": (3, None),
}
_WEEK_OFFSETS = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_MONTH_OFFSETS = {"上": -1, "这": 0, "本": 0, "下": 1}
_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "七": 6,
             "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
_SATURDAY = 5
_DAYS_PER_WEEK = 7
_HALF_DAY = 12
_DAY_HOURS = 24
_HOUR_MINUTES = 60
_NOON_EARLIEST = 10  # 中午十一点 stays 11:00, 中午一点 becomes 13:00
_EVENING_EARLIEST = 5  # 晚上一点 means 01:00 of the next day
_BARE_PM_HOURS = range(1, 7)  # a bare 三点 means 15:00
_HALF_HOUR = 30
_QUARTERS = {"一刻": 15, "三刻": 45}
_ONE_AS_A_BIT_BEFORE = set("高低快慢大小多少早晚好近远亮暗热冷凉暖强弱轻重紧松长短差有")

_RE_DELTA = re.compile(
    rf"(?P<n>{_INT})?个?(?P<half>半)?个?(?P<unit>小时|钟头|分钟)(?:以后|之后|后)"
)
_RE_DAY_WORD = re.compile("|".join(sorted(_DAY_WORDS, key=len, reverse=True)))
_RE_DAYS_LATER = re.compile(
    rf"(?P<n>{_INT})个?(?P<unit>天|日|周|星期|礼拜|月)(?P<dir>以后|之后|后|以前|之前|前)"
)
_RE_ISO_DATE = re.compile(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)")
_RE_MONTH_DAY = re.compile(
    rf"(?:(?P<y>\d{{4}}|[{_CN_DIGITS}]{{4}})年)?(?P<m>{_INT})月(?P<d>{_INT})[日号]?"
)
_RE_MONTH_REL = re.compile(rf"(?P<rel>上|下|这|本)个?月(?:(?P<d>{_INT})[号日]|(?P<edge>底|末|初))?")
_RE_MONTH_EDGE = re.compile(r"月(?P<edge>底|末|初)")
_RE_WEEKEND = re.compile(r"(?P<rel>上|下|这|本)?个?周末")
_RE_WEEK = re.compile(r"(?P<rel>上上|下下|上|下|这|本)?(?P<ge>个)?(?:周|星期|礼拜)(?!末)(?P<d>[一二三四五六日天七1-7](?!气))?")
_RE_DAY_OF_MONTH = re.compile(rf"(?<![月\d{_CN_DIGITS}十])(?P<d>{_INT})[号日](?!线)")
_RE_PERIOD = re.compile("|".join(_PERIODS))
_RE_CLOCK_COLON = re.compile(r"(?<!\d)(?P<h>[01]?\d|2[0-4])[:：](?P<m>[0-5]\d)(?!\d)")
_RE_CLOCK_CN = re.compile(
    rf"(?P<h>{_INT})(?:点|时)钟?(?:(?P<half>半)|(?P<quarter>一刻|三刻)|(?P<m>{_INT})分?)?"
)


class _Scanner:
    """Finds pieces of a time expression, masking each found span so later patterns skip it."""

    _MASK = "\x00"

    def __init__(self, text: str) -> None:
        self.text = text
        self.masked = text
        self.spans: list[tuple[int, int]] = []

    def take(self, pattern: re.Pattern[str], accept: Callable[[re.Match[str]], _T | None]) -> _T | None:
        """First match for which `accept` returns a non-None result; its span is recorded and masked."""
        for match in pattern.finditer(self.masked):
            result = accept(match)
            if result is not None:
                start, end = match.span()
                self.spans.append((start, end))
                self.masked = self.masked[:start] + self._MASK * (end - start) + self.masked[end:]
                return result
        return None

    def matched_text(self) -> str:
        return self.text[min(s for s, _ in self.spans):max(e for _, e in self.spans)]


@dataclass(frozen=True)
class _Days:
    first: date
    end: date  # exclusive
    period: str | None = None


def _int(token: str | None) -> int | None:
    if not token:
        return None
    value = _number_token(token)
    return value if isinstance(value, int) else None


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


def _month_edge_bare(today: date, match: re.Match[str]) -> _Days | None:
    edge = match.group("edge")
    past_start = edge == "初" and today.day > 1
    return _month_edge(_month_start(today, 1 if past_start else 0), edge)


def _week_monday(today: date, offset: int) -> date:
    return today - timedelta(days=today.weekday()) + timedelta(weeks=offset)


def _weekend(today: date, match: re.Match[str]) -> _Days | None:
    saturday = _week_monday(today, _WEEK_OFFSETS[match.group("rel") or "这"]) + timedelta(days=_SATURDAY)
    return _Days(saturday, saturday + timedelta(days=2))


def _week(today: date, match: re.Match[str]) -> _Days | None:
    rel, weekday = match.group("rel"), match.group("d")
    if rel is None and (weekday is None or match.group("ge")):
        return None  # 周围 / 一个星期 are not dates
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
    (_RE_DAYS_LATER, _days_later),
    (_RE_DAY_WORD, _day_word),
    (_RE_ISO_DATE, _iso_date),
    (_RE_MONTH_REL, _month_relative),
    (_RE_MONTH_DAY, _month_day),
    (_RE_MONTH_EDGE, _month_edge_bare),
    (_RE_WEEKEND, _weekend),
    (_RE_WEEK, _week),
    (_RE_DAY_OF_MONTH, _day_of_month),
)


def _find_days(scanner: _Scanner, today: date) -> _Days | None:
    for pattern, rule in _DATE_RULES:
        found = scanner.take(pattern, lambda m, rule=rule: rule(today, m))
        if found is not None:
            return found
    return None


def _delta(match: re.Match[str]) -> timedelta | None:
    n = _int(match.group("n")) if match.group("n") else 0
    if n is None or (not n and not match.group("half")):
        return None
    amount = n + (0.5 if match.group("half") else 0)
    return timedelta(minutes=amount) if match.group("unit") == "分钟" else timedelta(hours=amount)


def _clock_cn(text: str, match: re.Match[str]) -> tuple[int, int] | None:
    after = text[match.end():match.end() + 1]
    if after == "度":
        return None  # 二十二点五度 is a temperature
    if match.group("h") == "一" and not match.group("m") and (
        after in ("儿", "点") or text[match.start() - 1:match.start()] in _ONE_AS_A_BIT_BEFORE
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


def _at(day: date, tz: ZoneInfo, hours: int = 0, minutes: int = 0) -> datetime:
    return datetime.combine(day, time(), tzinfo=tz) + timedelta(hours=hours, minutes=minutes)


def _localize(now: datetime, tz: ZoneInfo) -> datetime:
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
    parts: _Parts, now: datetime, tz: ZoneInfo, duration: timedelta
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
    text: str, *, now: datetime, tz: ZoneInfo, limits: SlotLimits = DEFAULT_LIMITS
) -> TimeRange | None:
    """Resolve a Chinese date/time expression against the injected `now`.

    A bare date (or week / weekend / month) is an all-day range; a clock time starts there and lasts
    `limits.event_minutes`; a period alone (明天下午) spans that period; 两小时后 starts at now + 2h.
    """
    now = _localize(now, tz)
    scanner = _Scanner(text or "")
    delta = scanner.take(_RE_DELTA, _delta)
    if delta is not None:
        start = (now.astimezone(timezone.utc) + delta).astimezone(tz)
        return TimeRange(start, start + limits.event_duration, scanner.matched_text(), False)
    days = _find_days(scanner, now.date())
    period = days.period if days and days.period else scanner.take(_RE_PERIOD, lambda m: m.group(0))
    clock = _find_clock(scanner)
    if not scanner.spans:
        return None
    parts = _Parts(days, period, clock)
    start, end, all_day = _range_from_parts(parts, now, tz, limits.event_duration)
    return TimeRange(start, end, scanner.matched_text(), all_day)


# --------------------------------------------------------------------------- dispatch


def _slot_value(
    slot_type: str, text: str, *, now: datetime, tz: ZoneInfo, limits: SlotLimits
) -> object | None:
    if slot_type == "temperature":
        value = extract_temperature(text, limits)
        return value if validate_temperature(value, limits) else None
    if slot_type == "order_id":
        return extract_order_id(text, limits)
    if slot_type == "destination":
        return extract_destination(text)
    if slot_type == "datetime":
        found = extract_datetime(text, now=now, tz=tz, limits=limits)
        return found.to_dict() if found else None
    if slot_type == "number":
        return parse_chinese_number(text)
    return None  # "text" slots are filled by the dialogue layer, not here


def extract_slots(
    text: str,
    specs: Iterable[SlotSpecLike],
    *,
    now: datetime,
    tz: ZoneInfo,
    limits: SlotLimits = DEFAULT_LIMITS,
) -> dict[str, object]:
    """Values for the slots found in `text`, keyed by spec name; missing or invalid slots are left out.

    An out-of-range temperature is left out so the caller asks again; datetimes are JSON-friendly dicts.
    """
    found: dict[str, object] = {}
    for spec in specs:
        value = _slot_value(spec.type, text, now=now, tz=tz, limits=limits)
        if value is not None:
            found[spec.name] = value
    return found
