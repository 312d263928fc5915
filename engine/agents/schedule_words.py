"""What a schedule or to-do request says: the title a new item takes, and the new time an update names."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta, tzinfo

from engine.agents.base import zone
from engine.agents.text import at_day_end
from engine.slots import DEFAULT_LIMITS, extract_datetime, parse_chinese_number
from protocol.agents import CandidateItem, SubAgentInputBase

_FALLBACK_TITLE = "日程"
# removed anywhere in the sentence when a title is derived; longest first so 帮我记上 goes before 帮我
_COMMAND_WORDS = sorted(
    [
        "提醒我",
        "提醒一下",
        "帮我",
        "麻烦你",
        "麻烦",
        "记一下",
        "记下来",
        "记上",
        "记着",
        "加个日程",
        "新建日程",
        "新增日程",
        "新建待办",
        "加一条待办",
        "加个待办",
        "建个待办",
        "帮我记上",
        "记得",
        "到时候",
        "叫我",
        "喊我",
        "别让我忘了",
        "跟我说一声",
        "放到日程里",
        "放进日程",
        "加到日程里",
        "加进日程",
        "日程里",
        "待办",
        "找个时间",
        "抽个时间",
        "约个时间",
        "安排个时间",
        "安排时间",
        "抽空",
        "排个时间",
        "记个事儿",
        "记件事儿",
        "记个事",
        "记件事",
        "找时间",
        "抽时间",
        "有空的时候",
        "有空时",
        "帮忙",
        "空出来",
        "留出来",
        "留点时间",
        "留些时间",
        "留出时间",
        "腾出来",
    ],
    key=len,
    reverse=True,
)
_RE_COMMAND = re.compile("|".join(map(re.escape, _COMMAND_WORDS)))
# a request's own verb before the thing (安排一个…, 约一下…, 预约…, 排一下…) is no part of its title; 约会, 排练 and
# 排队 are things
_VERB = r"(?:安排|预约|预订|预定|约(?!会)|排(?![练队球版])|定(?=一?个))(?:了|好了|一下|个)?"
_RE_LEADING = re.compile(
    rf"^(?:我|要|得|的|有个|一个|一次|一下(?!午)|一早|一大早|都要|也要|还要|开始(?=[^，。]{{2}})|请(?=帮|给|在|把|订|定|提醒|安排|记|你|您)|请(?![^，。]{{0,6}}?[吃喝])|那就|就|回头|想要|想(?!法)"
    rf"|(?:给我|替我)(?=安排|预|约|排)|{_VERB})+"
)
# a request for an item that names no thing (帮我新建一个日程): no part of the title the answer then gives
_RE_PLACEHOLDER = re.compile(
    r"(?:新建|新增|添加|创建|建|加|记)(?:一个|个|一条|条|一件|件)?(?:日程|待办|事项|提醒|行程|安排|事儿|事情|事)"
)
# 在/于 before a time belongs to the time (帮我在明天下午两点安排…), and so does an answer's 定在 / 放在
# (定在明天上午十点吧), and a bare 记 before it (帮我记下周五晚上…: 记 asks, 下周五 is the time)
_RE_TIME_PREPOSITION = re.compile(r"(?:(?:定|放|改|排|约)?在|定到|于|(?:^|(?<=[忙我]))记)$")
_RE_PARTICLES = re.compile(r"(?:吧|呀|啊|哈|呢|哦|噢|呗|嘛|啦)+$")
# 和房东见面的事 is 和房东见面; 谈一下漏水的事 keeps it: 的事 is what the talk is about
_RE_TRAILING = re.compile(r"(?:的事情?|的事儿|这件事|这个事|的时间|的)+$")
_RE_ABOUT = re.compile(r"谈|聊|说|讲|商量|讨论|沟通|处理|解决|问|咨询|办")
# a clause that is only the request's filler once the rest is gone (给我，…; 定吧 in an answer)
_FILLER = frozenset(
    {"给我", "替我", "帮忙", "定", "好", "好的", "行", "可以", "嗯"}
    | {"加一条", "加一个", "加个", "加一下", "记一条", "添一条", "新建一个"}
)
# a clause after the thing that says how to go about it or why (得空腹去, 临时有事): no part of the title
_RE_ASIDE = re.compile(r"^(?:得|需要|必须|一定要|记得带|要带|带上|别忘|因为|临时|估计|可能|应该|听说|要?空腹|要提前)")
# a clause that says only how long (开部门例会，开一个小时; 练琴，练两个钟头): the item's length, no part of its title
# a clause that says the item takes a part of the day (估计要一个上午): how long, not what
_RE_PERIOD_LENGTH = re.compile(
    r"^(?:大概|大约|差不多|预计|估计)?(?:要|得)?(?:花|用)?(?:一个|一|半个|整个|一整个)(?:上午|下午|晚上|白天|天)"
    r"(?:左右|的时间)?(?:吧|呀|啊|哈|呢|哦|啦)*$"
)
# 留出两个小时写代码: the time kept free is the item's length, and no part of its title
_RE_KEEP_FREE = re.compile(
    r"(?:给我)?(?:留出|空出|腾出|留|空)(?:来)?(?P<n>\d+|[一二两俩三仨四五六七八九十]+)?个?(?P<half>半)?个?"
    r"(?P<unit>小时|钟头|分钟)(?:的时间|时间)?(?:来|用来)?"
)
_RE_LENGTH = re.compile(
    r"^(?:大概|大约|差不多|预计|估计)?(?:要|得)?(?:[开练跑写学读看玩做聊谈上弄搞打]{1,2}|持续|用|花)?(?:上)?"
    r"(?P<n>\d+|[一二两俩三仨四五六七八九十]+)?个?(?P<half>半)?个?(?P<unit>小时|钟头|分钟)(?:左右|上下)?"
    r"(?:吧|呀|啊|哈|呢|哦|啦)*$"
)
_RE_CLAUSE = re.compile(r"[，,。.！!？?；;、：:…\s]+")
_RE_DEADLINE = re.compile(r"^(?:之前|以前|前)")
_RE_CONNECTOR = re.compile(r"(?:到|至|~|～|-|—)$")
# the words between an item's time and its new one (明天的会改到后天); scope resolution reads the item before them
MOVE_MARKER = re.compile(
    "|".join(
        sorted(
            [
                "改到",
                "改成",
                "改在",
                "推到",
                "挪到",
                "调到",
                "换到",
                "延到",
                "提前到",
                "提早到",
                "移到",
                "往后推",
                "推迟到",
                "延后到",
            ],
            key=len,
            reverse=True,
        )
    )
)
_RE_SHIFT = re.compile(
    r"(?P<dir>往后推|往后挪|往后错|往后延|推后|推迟|延后|顺延|提前|提早|往前挪|往前调|往前错|晚|早)了?(?P<n>\d+|[一二两三四五六七八九十]+)?"
    r"个?(?P<half>半)?个?(?P<unit>小时|钟头|分钟|天|周|星期|礼拜)"
)
_RE_SAME_TIME = re.compile(r"(?:的|在)?(?:同一|同样的?|相同的?|原来的?|一样的?)(?:时间|时刻|时候|钟点)")
_RE_DATE_HINT = re.compile(r"[天日号周月年今明昨]|星期|礼拜|\d{1,4}[-/.]\d{1,2}")


def derive_title(raw_input: str, *, now: datetime, tz: tzinfo) -> tuple[str, bool]:
    """(title, is_deadline) read from the request: the time expressions and command words taken out, clause by
    clause; `is_deadline` when the first time expression is followed by 之前/以前/前 (周五之前要交报告).

    The title is one clause: where several are left (那个，去趟车管所换驾驶证; 去洗牙，之前约好的), the one said with
    the time (the thing is named beside its time), else the longest; the others are fillers, asides and reasons."""
    clauses: list[tuple[str, bool]] = []
    deadline = False
    for clause in _RE_CLAUSE.split(raw_input):
        if _RE_PERIOD_LENGTH.match(clause) or (clauses and _RE_ASIDE.match(clause)):
            continue
        timed = False
        for _ in range(3):  # 下午三点到五点 holds two expressions
            found = extract_datetime(clause, now=now, tz=tz)
            if found is None:
                break
            head, _, tail = clause.partition(found.text)
            timed = True
            due = _RE_DEADLINE.match(tail)
            deadline = deadline or (due is not None and not clauses)
            clause = _RE_TIME_PREPOSITION.sub("", _RE_CONNECTOR.sub("", head)) + tail[due.end() if due else 0 :]
        clause = _RE_PLACEHOLDER.sub("", _RE_COMMAND.sub("", _RE_KEEP_FREE.sub("", clause)))
        clause = _RE_PARTICLES.sub("", _RE_LEADING.sub("", clause))
        if not _RE_ABOUT.search(clause):
            clause = _RE_TRAILING.sub("", clause)
        if clause and clause not in _FILLER and not _RE_LENGTH.match(clause):
            clauses.append((clause, timed))
    if not clauses:
        return _FALLBACK_TITLE, deadline
    timed_ones = [c for c, timed in clauses if timed]
    return (timed_ones[0] if timed_ones else max((c for c, _ in clauses), key=len))[:200], deadline


def said_length(raw_input: str) -> timedelta | None:
    """How long the new item lasts when a clause says only that (开部门例会，开一个小时 → 1 h); None otherwise."""
    for clause in _RE_CLAUSE.split(raw_input):
        found = _RE_LENGTH.match(clause) or _RE_KEEP_FREE.search(clause)
        if found and (found.group("n") or found.group("half")):
            said = (found.group("n") or "").replace("俩", "两").replace("仨", "三")
            amount = (parse_chinese_number(said) or 0) if said else 0
            amount += 0.5 if found.group("half") else 0
            unit = timedelta(minutes=1) if found.group("unit") == "分钟" else timedelta(hours=1)
            return amount * unit if amount else None
    return None


def time_changes(item: CandidateItem, text: str, inp: SubAgentInputBase) -> dict[str, datetime]:
    """The item's new time fields read from `text`, its duration kept; empty when no new time is said."""
    tz = zone(inp)
    old = item.start_at or item.due_at
    anchor = (old or inp.now).astimezone(tz)
    shift = _RE_SHIFT.search(text)
    if shift:
        new_start = anchor + _shift_delta(shift)
    else:
        marker = MOVE_MARKER.search(text)
        said = text[marker.end() :] if marker else ""
        same_clock = _RE_SAME_TIME.search(said) is not None
        found = extract_datetime(_RE_SAME_TIME.sub("", said), now=inp.now, tz=tz) if marker else None
        if found is None:
            return {}
        if same_clock:  # 明晚同一时间 (一时 is no 1 o'clock): that day, the item's own clock
            day = found.start.replace(hour=0, minute=0, second=0, microsecond=0)
            found = replace(found, start=day, end=day + timedelta(days=1), all_day=True)
        if not _RE_DATE_HINT.search(found.text):
            # only a clock or a period was said: it stays on the item's own day
            day_start = anchor.replace(hour=0, minute=0, second=0, microsecond=0)
            found = extract_datetime(found.text, now=day_start, tz=tz) or found
        new_start = found.start
        if found.all_day:  # only a day was said: the item keeps its clock time (a to-do without one, the day's end)
            new_start = (
                datetime.combine(found.start.date(), anchor.timetz()) if old else at_day_end(found.start.date(), tz)
            )
    if item.start_at is None and (item.due_at is not None or item.item_type == "todo"):
        new = {"due_at": new_start}
    else:
        if item.start_at is not None and item.end_at is not None:
            duration = item.end_at - item.start_at
        else:
            duration = DEFAULT_LIMITS.event_duration
        new = {"start_at": new_start, "end_at": new_start + duration}
    if old is not None and new_start == old:
        return {}  # the time said is the item's own
    return {key: value for key, value in new.items() if value != getattr(item, key)}


def _shift_delta(match: re.Match[str]) -> timedelta:
    amount = (parse_chinese_number(match.group("n")) or 0) if match.group("n") else 0
    amount += 0.5 if match.group("half") else 0
    amount = amount or 1  # 往后推个小时 says no number: one unit
    week = timedelta(weeks=1)
    units = {"天": timedelta(days=1), "分钟": timedelta(minutes=1), "周": week, "星期": week, "礼拜": week}
    unit = units.get(match.group("unit"), timedelta(hours=1))
    sign = -1 if match.group("dir").startswith(("提前", "提早", "往前", "早")) else 1
    return sign * amount * unit
