"""Table-driven tests for the rule-based slot extractors in engine.slots."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from engine.slots import (
    DEFAULT_LIMITS,
    SlotLimits,
    TimeRange,
    extract_datetime,
    extract_destination,
    extract_order_id,
    extract_slots,
    extract_temperature,
    parse_chinese_number,
    validate_temperature,
)

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 11, 30, 10, 0, tzinfo=TZ)  # a Monday


def at(month: int, day: int, hour: int = 0, minute: int = 0, year: int = 2026) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=TZ)


def test_fixed_now_is_a_monday() -> None:
    assert NOW.weekday() == 0


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("二十二", 22),
        ("二十二点五", 22.5),
        ("十八", 18),
        ("两", 2),
        ("一百零五", 105),
        ("三十", 30),
        ("十", 10),
        ("二十六度半", 26.5),
        ("26", 26),
        ("26.5", 26.5),
        ("２６", 26),
        ("一百五", 150),
        ("两千零一十", 2010),
        ("十二万", 120_000),
        ("二零二六", 2026),
        ("零", 0),
        ("三点半", 3.5),
        ("三个半", 3.5),
        ("帮我调成十八", 18),
        ("查一下第3个", 3),
    ],
)
def test_parse_chinese_number(text: str, expected: float) -> None:
    value = parse_chinese_number(text)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize("text", ["", "你好", "帮我查一下", "高一点", "一起去吧"])
def test_parse_chinese_number_none(text: str) -> None:
    assert parse_chinese_number(text) is None


# --------------------------------------------------------------------------- temperature


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("调到二十二度", 22),
        ("空调26度", 26),
        ("温度设成 24", 24),
        ("二十六度半", 26.5),
        ("空调调到26度半", 26.5),
        ("把温度调到二十二点五度", 22.5),
        ("温度调到二十二点五", 22.5),
        ("空调开到18℃", 18),
        ("温度调高到26度", 26),
        ("外面35度，空调调到24度", 24),
        ("外面35度，空调24度", 24),
        ("调到35度", 35),  # returned, but invalid (see validate)
        ("设成十度", 10),
    ],
)
def test_extract_temperature(text: str, expected: float) -> None:
    assert extract_temperature(text, DEFAULT_LIMITS) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "高一点",
        "温度高一点",
        "调低一点",
        "调高两度",
        "再升高1度",
        "降低3度",
        "音量调到24",
        "亮度调到50",
        "打开空调",
        "空调开到三点",
        "打开空调2小时",
        "风量调到3",
    ],
)
def test_extract_temperature_none(text: str) -> None:
    assert extract_temperature(text, DEFAULT_LIMITS) is None


@pytest.mark.parametrize(
    ("value", "limits", "ok"),
    [
        (22, DEFAULT_LIMITS, True),
        (16, DEFAULT_LIMITS, True),
        (32, DEFAULT_LIMITS, True),
        (26.5, DEFAULT_LIMITS, True),
        (15.5, DEFAULT_LIMITS, False),
        (35, DEFAULT_LIMITS, False),
        (None, DEFAULT_LIMITS, False),
        (30, SlotLimits(temperature_min=18, temperature_max=28), False),
        (18, SlotLimits(temperature_min=18, temperature_max=28), True),
    ],
)
def test_validate_temperature(value: float | None, limits: SlotLimits, ok: bool) -> None:
    assert validate_temperature(value, limits) is ok


def test_slot_limits_reject_inverted_range() -> None:
    with pytest.raises(ValueError):
        SlotLimits(temperature_min=30, temperature_max=20)


# --------------------------------------------------------------------------- order id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A12345", "A12345"),
        ("帮我查一下a12345的物流", "A12345"),
        ("订单B7788", "B7788"),
        ("订单号 20241130001", "20241130001"),
        ("单号：DD-2024-0001", "DD-2024-0001"),
        ("我的订单号是 2024 1130 001", "20241130001"),
        ("订单号是 A 1234 5", "A12345"),
        ("尾号3321的订单", "3321"),
        ("订单尾号是3321", "3321"),
        ("订单号一二三四五六", "123456"),
        ("取消订单C20001吧", "C20001"),
        ("明天下午把订单A12345退了", "A12345"),
    ],
)
def test_extract_order_id(text: str, expected: str) -> None:
    assert extract_order_id(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "我的订单什么时候到",
        "空调26度",
        "明天15:30",
        "A12",
        "订单A12",
        "尾号12",
        "打电话给10086",
        "手机尾号1234",
        "单号2024年",
        "走G60高速",
        "订单号 15:30",
    ],
)
def test_extract_order_id_none(text: str) -> None:
    assert extract_order_id(text) is None


def test_order_id_min_length_is_configurable() -> None:
    assert extract_order_id("订单A12", SlotLimits(order_id_min_length=3)) == "A12"


# --------------------------------------------------------------------------- destination


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("导航去公司", "公司"),
        ("带我去首都机场", "首都机场"),
        ("去人民广场怎么走", "人民广场"),
        ("我要去上海虹桥站，不要高速", "上海虹桥站"),
        ("导航到最近的加油站", "最近的加油站"),
        ("开车回家", "家"),
        ("导航去公司吧", "公司"),
        ("帮我导航一下去机场呀", "机场"),
        ("导航到浦东机场不走高速", "浦东机场"),
        ("去西湖一下", "西湖"),
        ("回到家还有多远", "家"),
        ("明天下午去虹桥机场", "虹桥机场"),
        ("我想去外滩啊！", "外滩"),
    ],
)
def test_extract_destination(text: str, expected: str) -> None:
    assert extract_destination(text) == expected


@pytest.mark.parametrize("text", ["", "打开导航", "你要去哪里", "导航声音调大一点", "什么时候到", "关闭空调"])
def test_extract_destination_none(text: str) -> None:
    assert extract_destination(text) is None


# --------------------------------------------------------------------------- datetime


@pytest.mark.parametrize(
    ("text", "start", "end", "all_day", "matched"),
    [
        # bare days / relative day words
        ("今天", at(11, 30), at(12, 1), True, "今天"),
        ("明天", at(12, 1), at(12, 2), True, "明天"),
        ("后天", at(12, 2), at(12, 3), True, "后天"),
        ("大后天", at(12, 3), at(12, 4), True, "大后天"),
        ("昨天", at(11, 29), at(11, 30), True, "昨天"),
        ("三天后", at(12, 3), at(12, 4), True, "三天后"),
        ("两周后", at(12, 14), at(12, 15), True, "两周后"),
        # weekdays
        ("周一", at(11, 30), at(12, 1), True, "周一"),
        ("周三", at(12, 2), at(12, 3), True, "周三"),
        ("星期五", at(12, 4), at(12, 5), True, "星期五"),
        ("礼拜天", at(12, 6), at(12, 7), True, "礼拜天"),
        ("星期日", at(12, 6), at(12, 7), True, "星期日"),
        ("这周五", at(12, 4), at(12, 5), True, "这周五"),
        ("下周三", at(12, 9), at(12, 10), True, "下周三"),
        ("下个星期一", at(12, 7), at(12, 8), True, "下个星期一"),
        ("下下周一", at(12, 14), at(12, 15), True, "下下周一"),
        # 一下 is a verb's particle: its 下 is no "next"
        ("帮我约一下周五下午去体检", at(12, 4, 13), at(12, 4, 18), False, "周五下午"),
        ("看一下下周三", at(12, 9), at(12, 10), True, "下周三"),
        ("查一下周末", at(12, 5), at(12, 7), True, "周末"),
        # a clock right after 到 ends the range; 到 a place does not
        ("周四上午十点到十一点半开部门会", at(12, 3, 10), at(12, 3, 11, 30), False, "周四上午十点到十一点半"),
        ("明天下午两点到四点", at(12, 1, 14), at(12, 1, 16), False, "明天下午两点到四点"),
        ("明天下午三点到公司开会", at(12, 1, 15), at(12, 1, 16), False, "明天下午三点"),
        # week / weekend / month ranges
        ("这周", at(11, 30), at(12, 7), True, "这周"),
        ("本周", at(11, 30), at(12, 7), True, "本周"),
        ("下周", at(12, 7), at(12, 14), True, "下周"),
        ("周末", at(12, 5), at(12, 7), True, "周末"),
        ("下周末", at(12, 12), at(12, 14), True, "下周末"),
        ("下个月", at(12, 1), at(1, 1, year=2027), True, "下个月"),
        ("月底", at(11, 30), at(12, 1), True, "月底"),
        ("下个月底", at(12, 31), at(1, 1, year=2027), True, "下个月底"),
        # explicit dates
        ("12月3号", at(12, 3), at(12, 4), True, "12月3号"),
        ("十二月二十五日", at(12, 25), at(12, 26), True, "十二月二十五日"),
        ("3月5号", at(3, 5, year=2027), at(3, 6, year=2027), True, "3月5号"),
        ("2026年12月25日", at(12, 25), at(12, 26), True, "2026年12月25日"),
        ("下个月5号", at(12, 5), at(12, 6), True, "下个月5号"),
        ("1号", at(12, 1), at(12, 2), True, "1号"),
        # date + time
        ("明天下午三点", at(12, 1, 15), at(12, 1, 16), False, "明天下午三点"),
        ("提醒我明天下午三点开会", at(12, 1, 15), at(12, 1, 16), False, "明天下午三点"),
        ("后天上午十点半", at(12, 2, 10, 30), at(12, 2, 11, 30), False, "后天上午十点半"),
        ("今晚八点", at(11, 30, 20), at(11, 30, 21), False, "今晚八点"),
        ("明天凌晨两点", at(12, 1, 2), at(12, 1, 3), False, "明天凌晨两点"),
        ("今天早上八点", at(11, 30, 8), at(11, 30, 9), False, "今天早上八点"),
        ("下周三下午3点15分", at(12, 9, 15, 15), at(12, 9, 16, 15), False, "下周三下午3点15分"),
        ("周三三点", at(12, 2, 15), at(12, 2, 16), False, "周三三点"),
        ("12月3号 15:30", at(12, 3, 15, 30), at(12, 3, 16, 30), False, "12月3号 15:30"),
        ("三天后下午两点", at(12, 3, 14), at(12, 3, 15), False, "三天后下午两点"),
        # time only (today, or tomorrow once already past)
        ("三点半", at(11, 30, 15, 30), at(11, 30, 16, 30), False, "三点半"),
        ("15:30", at(11, 30, 15, 30), at(11, 30, 16, 30), False, "15:30"),
        ("三点一刻", at(11, 30, 15, 15), at(11, 30, 16, 15), False, "三点一刻"),
        ("晚上八点三刻", at(11, 30, 20, 45), at(11, 30, 21, 45), False, "晚上八点三刻"),
        ("中午十二点", at(11, 30, 12), at(11, 30, 13), False, "中午十二点"),
        ("中午一点", at(11, 30, 13), at(11, 30, 14), False, "中午一点"),
        ("晚上12点", at(12, 1, 0), at(12, 1, 1), False, "晚上12点"),
        ("早上八点", at(12, 1, 8), at(12, 1, 9), False, "早上八点"),
        ("凌晨两点", at(12, 1, 2), at(12, 1, 3), False, "凌晨两点"),
        ("下午3点15分", at(11, 30, 15, 15), at(11, 30, 16, 15), False, "下午3点15分"),
        # periods alone span the period
        ("今晚", at(11, 30, 18), at(12, 1, 0), False, "今晚"),
        ("明天上午", at(12, 1, 8), at(12, 1, 12), False, "明天上午"),
        ("周末下午", at(12, 5, 13), at(12, 5, 18), False, "周末下午"),
        # offsets from now
        ("两小时后", at(11, 30, 12), at(11, 30, 13), False, "两小时后"),
        ("两个小时以后提醒我", at(11, 30, 12), at(11, 30, 13), False, "两个小时以后"),
        ("半小时后", at(11, 30, 10, 30), at(11, 30, 11, 30), False, "半小时后"),
        ("一个半小时后", at(11, 30, 11, 30), at(11, 30, 12, 30), False, "一个半小时后"),
        ("十分钟后", at(11, 30, 10, 10), at(11, 30, 11, 10), False, "十分钟后"),
        # 这一周 is 这周; the rest of a period that has begun starts today; 整 after a clock is part of it
        ("这一周过得怎么样", at(11, 30), at(12, 7), True, "这一周"),
        ("下一个星期", at(12, 7), at(12, 14), True, "下一个星期"),
        ("这周剩下几天有什么事", at(11, 30), at(12, 7), True, "这周"),
        ("这个月余下的时间", at(11, 30), at(12, 1), True, "这个月"),
        ("晚上七点整吃饭", at(11, 30, 19), at(11, 30, 20), False, "晚上七点整"),
        ("四点整理房间", at(11, 30, 16), at(11, 30, 17), False, "四点"),
        # a run of days from today, ahead or back; a month by its name
        ("未来三天有什么事", at(11, 30), at(12, 3), True, "未来三天"),
        ("接下来一周", at(11, 30), at(12, 7), True, "接下来一周"),
        ("最近三天做得怎样", at(11, 28), at(12, 1), True, "最近三天"),
        ("十月份的安排", at(10, 1), at(11, 1), True, "十月份"),
        ("2027年1月份", at(1, 1).replace(year=2027), at(2, 1).replace(year=2027), True, "2027年1月份"),
        # a second day right after the first extends the range through it
        ("昨天和今天的情况", at(11, 29), at(12, 1), True, "昨天和今天"),
        ("12月3号到12月5号出差", at(12, 3), at(12, 6), True, "12月3号到12月5号"),
        ("明天和小王吃饭", at(12, 1), at(12, 2), True, "明天"),
        ("周三周四这两天", at(12, 2), at(12, 4), True, "周三周四"),
        ("明儿上午", at(12, 1, 8), at(12, 1, 12), False, "明儿上午"),
        ("昨儿的会", at(11, 29), at(11, 30), True, "昨儿"),
        ("明天后天都有雨", at(12, 1), at(12, 3), True, "明天后天"),
        ("明天下午三点", at(12, 1, 15), at(12, 1, 16), False, "明天下午三点"),
        # a day named in a later clause is the reason's, not the time's: the first one said is the time (NOW: Mon)
        ("挪到周四上午九点半吧，明天得出差", at(12, 3, 9, 30), at(12, 3, 10, 30), False, "周四上午九点半"),
        ("周五下午的会改到下周二，后天没空", at(12, 4, 13), at(12, 4, 18), False, "周五下午"),
        ("明天去3号楼拿快递", at(12, 1), at(12, 2), True, "明天"),
        # a period said as how long it went on is no time of the day (NOW: Mon 10:00)
        ("昨天的游泳没去成，刮了一下午的风", at(11, 29), at(11, 30), True, "昨天"),
        ("周三开了一上午的会", at(12, 2), at(12, 3), True, "周三"),
        ("周六一早上去爬山", at(12, 5, 6), at(12, 5, 9), False, "周六一早上"),
        ("周六一整个下午都空着吗", at(12, 5, 13), at(12, 5, 18), False, "周六一整个下午"),
        # fixed-date holidays, the next one
        ("国庆节", at(10, 1).replace(year=2027), at(10, 2).replace(year=2027), True, "国庆节"),
        ("圣诞节那天", at(12, 25), at(12, 26), True, "圣诞节"),
    ],
)
def test_extract_datetime(text: str, start: datetime, end: datetime, all_day: bool, matched: str) -> None:
    found = extract_datetime(text, now=NOW, tz=TZ)
    assert found == TimeRange(start=start, end=end, text=matched, all_day=all_day)
    assert found.start.tzinfo is not None and found.start.utcoffset() == timedelta(hours=8)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "帮我查一下订单",
        "温度高一点",
        "快一点",
        "空调调到二十二点五度",
        "周围有什么好吃的",
        "一个星期",
        "一周",
        "五一路",
        "导航去公司",
        "订单号 20241130001",
        "尾号3321的订单",
        "聪明儿童",
        "如今儿子长大了",
    ],
)
def test_extract_datetime_none(text: str) -> None:
    assert extract_datetime(text, now=NOW, tz=TZ) is None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # a Thursday: this week's Wednesday is behind, and still the end of 这周一到周三
        ("这周一到周三拖下来的活", at(11, 30), at(12, 3)),
        ("周一周二这两天", at(12, 7), at(12, 9)),
        ("周五到下周二", at(12, 4), at(12, 9)),
        # the rest of this week, from today
        ("这礼拜后头几天还有啥要忙的", at(12, 3), at(12, 7)),
        ("这周后面几天", at(12, 3), at(12, 7)),
    ],
)
def test_a_run_of_days_reads_its_second_day_from_the_first(text: str, start: datetime, end: datetime) -> None:
    found = extract_datetime(text, now=at(12, 3, 9), tz=TZ)
    assert found is not None and (found.start, found.end) == (start, end)


def test_extract_datetime_uses_injected_now_and_zone() -> None:
    other_now = datetime(2027, 2, 26, 23, 0, tzinfo=TZ)  # a Friday
    assert extract_datetime("明天", now=other_now, tz=TZ).start == datetime(2027, 2, 27, tzinfo=TZ)
    assert extract_datetime("月底", now=other_now, tz=TZ).start == datetime(2027, 2, 28, tzinfo=TZ)
    assert extract_datetime("下周一", now=other_now, tz=TZ).start == datetime(2027, 3, 1, tzinfo=TZ)


def test_extract_datetime_converts_now_into_user_zone() -> None:
    utc_now = NOW.astimezone(ZoneInfo("UTC"))  # 02:00 UTC, same instant
    found = extract_datetime("明天下午三点", now=utc_now, tz=TZ)
    assert found.start == at(12, 1, 15)
    assert found.start.tzinfo == TZ


def test_extract_datetime_event_length_is_configurable() -> None:
    found = extract_datetime("明天下午三点", now=NOW, tz=TZ, limits=SlotLimits(event_minutes=30))
    assert found.end - found.start == timedelta(minutes=30)


def test_time_range_is_frozen() -> None:
    found = extract_datetime("明天", now=NOW, tz=TZ)
    with pytest.raises(AttributeError):
        found.start = NOW  # type: ignore[misc]


# --------------------------------------------------------------------------- extract_slots


@dataclass(frozen=True)
class Spec:
    name: str
    type: str


def slots(text: str, *specs: tuple[str, str], limits: SlotLimits = DEFAULT_LIMITS) -> dict[str, object]:
    return extract_slots(text, [Spec(n, t) for n, t in specs], now=NOW, tz=TZ, limits=limits)


@pytest.mark.parametrize(
    ("text", "specs", "expected"),
    [
        ("空调调到二十二度", [("temp", "temperature")], {"temp": 22}),
        ("空调调到35度", [("temp", "temperature")], {}),  # out of range: left out so the caller re-asks
        ("查一下订单B7788", [("order", "order_id")], {"order": "B7788"}),
        ("导航去公司", [("dest", "destination")], {"dest": "公司"}),
        ("座椅加热调到三档", [("level", "number")], {"level": 3}),
        ("提醒我买牛奶", [("content", "text")], {}),
        ("打开车窗", [("temp", "temperature"), ("order", "order_id"), ("when", "datetime")], {}),
        (
            "明天下午三点去首都机场",
            [("dest", "destination"), ("when", "datetime"), ("note", "text")],
            {
                "dest": "首都机场",
                "when": {
                    "start": "2026-12-01T15:00:00+08:00",
                    "end": "2026-12-01T16:00:00+08:00",
                    "text": "明天下午三点",
                    "all_day": False,
                },
            },
        ),
    ],
)
def test_extract_slots(text: str, specs: list[tuple[str, str]], expected: dict[str, object]) -> None:
    assert slots(text, *specs) == expected


def test_extract_slots_datetime_is_json_friendly() -> None:
    found = slots("这周", ("week", "datetime"))
    assert json.loads(json.dumps(found)) == {
        "week": {
            "start": "2026-11-30T00:00:00+08:00",
            "end": "2026-12-07T00:00:00+08:00",
            "text": "这周",
            "all_day": True,
        }
    }


def test_extract_slots_respects_custom_limits() -> None:
    assert slots("空调调到30度", ("temp", "temperature"), limits=SlotLimits(temperature_max=28)) == {}
    assert slots("空调调到30度", ("temp", "temperature")) == {"temp": 30}


def test_extract_slots_accepts_pack_slot_specs() -> None:
    pytest.importorskip("yaml")
    from engine.pack import SlotSpec

    specs = [SlotSpec(name="order", type="order_id"), SlotSpec(name="when", type="datetime")]
    found = extract_slots("尾号3321的订单明天送到吗", specs, now=NOW, tz=TZ, limits=DEFAULT_LIMITS)
    assert found["order"] == "3321"
    assert found["when"]["start"] == "2026-12-01T00:00:00+08:00"
