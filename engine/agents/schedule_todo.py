"""schedule_todo_agent: create, update, delete and query one user's schedules and to-dos.

The write functions only propose a db_action (a write-request body) for the user to confirm; update and delete act
on the one candidate execution resolved, query only reads the candidates it was given.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from engine.agents.base import definition, failure, reply, the_one_candidate, unknown, zone
from engine.agents.text import at_day_end, clock, date_label, is_whole_days, moment_label, single_day
from engine.slots import DEFAULT_LIMITS, extract_datetime, parse_chinese_number
from protocol.agents import AgentFunctionDefinition, AgentName, AgentResponseEnvelope, CandidateItem, SubAgentInputBase
from protocol.rest import TaskItemPayload

NAME: AgentName = "schedule_todo_agent"
_FALLBACK_TITLE = "日程"
_SHORTEST_SCHEDULE = timedelta(minutes=15)
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
        "一下",
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
    ],
    key=len,
    reverse=True,
)
_RE_COMMAND = re.compile("|".join(map(re.escape, _COMMAND_WORDS)))
_RE_LEADING = re.compile(r"^(?:我|要|去|得|的|有个|一个|还要|请)+")
_RE_TRAILING = re.compile(r"(?:的|吧|呀|啊|哈|呢|哦|噢|呗|嘛|啦)+$")
_RE_CLAUSE = re.compile(r"[，,。.！!？?；;、：:\s]+")
_RE_DEADLINE = re.compile(r"^(?:之前|以前|前)")
_RE_CONNECTOR = re.compile(r"(?:到|至|~|～|-|—)$")
_RE_TITLE_CHANGE = re.compile(
    r"(?:改名为|改名叫|改名成|标题改成|标题改为|名字改成|名字改为|名称改为|重命名为)"
    r"(?P<title>[^，,。！!？?；;]+)"
)
_RE_MOVE = re.compile(
    "|".join(
        sorted(
            ["改到", "改成", "推到", "挪到", "调到", "换到", "延到", "提前到", "移到", "往后推", "推迟到"],
            key=len,
            reverse=True,
        )
    )
)
_RE_SHIFT = re.compile(
    r"(?P<dir>往后推|往后挪|推迟|延后|提前|往前挪|往前调)了?(?P<n>\d+|[一二两三四五六七八九十]+)?"
    r"个?(?P<half>半)?个?(?P<unit>小时|钟头|分钟|天)"
)
_RE_DATE_HINT = re.compile(r"[天日号周月年今明昨]|星期|礼拜|\d{1,4}[-/.]\d{1,2}")

_DEFINITIONS = [
    definition(
        NAME,
        "create",
        "新建一条日程或待办（说了“待办”或只有截止日期时建待办）",
        required=["time_range"],
        optional=["title", "item_type"],
        needs_candidates=False,
    ),
    definition(NAME, "update", "修改一条已有日程或待办的时间（保持时长）或标题", needs_candidates=True),
    definition(NAME, "delete", "删除一条已有日程或待办", needs_candidates=True),
    definition(
        NAME, "query", "查询时间范围内的日程和待办", required=["time_range"], needs_candidates=True, writes=False
    ),
]


def derive_title(raw_input: str, *, now: datetime, tz: tzinfo) -> tuple[str, bool]:
    """(title, is_deadline) read from the request: the time expressions and command words taken out, clause by
    clause; `is_deadline` when the first time expression is followed by 之前/以前/前 (周五之前要交报告)."""
    clauses: list[str] = []
    deadline = False
    for clause in _RE_CLAUSE.split(raw_input):
        for _ in range(3):  # 下午三点到五点 holds two expressions
            found = extract_datetime(clause, now=now, tz=tz)
            if found is None:
                break
            head, _, tail = clause.partition(found.text)
            due = _RE_DEADLINE.match(tail)
            deadline = deadline or (due is not None and not clauses)
            clause = _RE_CONNECTOR.sub("", head) + tail[due.end() if due else 0 :]
        clause = _RE_COMMAND.sub("", clause)
        clause = _RE_TRAILING.sub("", _RE_LEADING.sub("", clause))
        if clause:
            clauses.append(clause)
    return "，".join(clauses)[:200] or _FALLBACK_TITLE, deadline


def _sort_key(item: CandidateItem) -> datetime:
    return item.start_at or item.due_at or item.end_at or datetime.max.replace(tzinfo=UTC)


def _when(item: CandidateItem, now: datetime, *, with_day: bool = True) -> str:
    """ "12月2日 15:00" (or "15:00" without the day) for the item's start, "截止 …" for a to-do's deadline, or ""."""
    moment = item.start_at or item.due_at
    if moment is None:
        return ""
    text = moment_label(moment, now) if with_day else clock(moment.astimezone(now.tzinfo))
    return text if item.start_at else f"截止 {text}"


def _line(item: CandidateItem, now: datetime, *, with_day: bool) -> str:
    when = _when(item, now, with_day=with_day)
    if item.start_at:
        return f"{when} {item.title}"
    return f"{item.title}（{when}）" if when else item.title


class ScheduleTodoAgent:
    name: AgentName = NAME

    def definitions(self) -> list[AgentFunctionDefinition]:
        return list(_DEFINITIONS)

    async def run(self, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        handlers = {"create": self._create, "update": self._update, "delete": self._delete, "query": self._query}
        if function not in handlers:
            raise unknown(NAME, function)
        return handlers[function](inp)

    def _create(self, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        tz = zone(inp)
        derived, deadline = derive_title(inp.raw_input, now=inp.now, tz=tz)
        given = inp.parsed_params.get("title")
        title = given.strip() if isinstance(given, str) and given.strip() else derived
        start, end = inp.time_range.start_at.astimezone(tz), inp.time_range.end_at.astimezone(tz)
        whole_days = is_whole_days(start, end, tz)
        item_type = inp.parsed_params.get("item_type")
        if item_type not in ("schedule", "todo"):
            item_type = "todo" if "待办" in inp.raw_input or deadline or whole_days else "schedule"
        if item_type == "todo":
            # a clock time (a point or one event long) is the deadline itself; a day or a period ends the day
            due = start if end - start <= DEFAULT_LIMITS.event_duration else end - timedelta(minutes=1)
            item = TaskItemPayload(item_type="todo", title=title, due_at=due)
            preview = f"新建待办：{title}（截止 {moment_label(due, inp.now, relative=True)}）"
        else:
            if end - start < _SHORTEST_SCHEDULE:
                end = start + DEFAULT_LIMITS.event_duration
            item = TaskItemPayload(item_type="schedule", title=title, start_at=start, end_at=end)
            end_text = clock(end) if single_day(start, end, tz) else moment_label(end, inp.now, relative=True)
            preview = f"新建日程：{moment_label(start, inp.now, relative=True)}–{end_text} {title}"
        payload = item.model_dump(mode="json", exclude_none=True)
        action = {"action": "create", "target_type": "task_item", "payload": payload, "preview_text": preview}
        return reply(NAME, "create", {"reply": preview, "item": payload}, db_action=action)

    def _update(self, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        item = the_one_candidate(inp)
        if item is None:
            return failure(NAME, "update", "没有确定要修改哪一项安排，请说一下它的名字或时间。")
        text, changes = inp.raw_input, {}
        title_change = _RE_TITLE_CHANGE.search(text)
        if title_change:
            text = text[: title_change.start()] + text[title_change.end() :]
            new_title = title_change.group("title").strip()
            if new_title and new_title != item.title:
                changes["title"] = new_title
        changes.update(_time_changes(item, text, inp))
        if not changes:
            return failure(
                NAME,
                "update",
                f"没看出要把「{item.title}」改成什么，请告诉我新的时间（比如“改到明天下午三点”）或新的标题。",
            )
        payload = TaskItemPayload.model_validate({**_current(item), **changes}).model_dump(mode="json")
        payload = {key: payload[key] for key in changes}
        preview = _update_preview(item, changes, inp.now)
        action = {
            "action": "update",
            "target_type": "task_item",
            "target_id": str(item.id),
            "base_version": item.version,
            "payload": payload,
            "preview_text": preview,
        }
        return reply(NAME, "update", {"reply": preview, "changes": payload}, db_action=action)

    def _delete(self, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        item = the_one_candidate(inp)
        if item is None:
            return failure(NAME, "delete", "没有确定要删除哪一项安排，请说一下它的名字或时间。")
        when = _when(item, inp.now)
        preview = f"删除「{item.title}」" + (f"（{when}）" if when else "")
        action = {
            "action": "delete",
            "target_type": "task_item",
            "target_id": str(item.id),
            "base_version": item.version,
            "payload": {},
            "preview_text": preview,
        }
        return reply(NAME, "delete", {"reply": preview, "item": item.model_dump(mode="json")}, db_action=action)

    def _query(self, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        tz = zone(inp)
        start, end = inp.time_range.start_at.astimezone(tz), inp.time_range.end_at.astimezone(tz)
        day = single_day(start, end, tz)
        label = date_label(day, inp.now.date(), relative=True) if day else "这段时间"
        if day and not is_whole_days(start, end, tz):
            label += f" {clock(start)}–{clock(end)}"
        items = sorted(inp.candidate_items, key=_sort_key)
        if not items:
            text = f"{label}没有安排。"
        else:
            lines = [_line(item, inp.now, with_day=day is None) for item in items]
            text = f"{label}有 {len(items)} 项安排：" + "；".join(lines) + "。"
        return reply(NAME, "query", {"reply": text, "items": [item.model_dump(mode="json") for item in items]})


def _current(item: CandidateItem) -> dict[str, Any]:
    fields = ("item_type", "title", "start_at", "end_at", "due_at", "long_goal_id")
    return {name: getattr(item, name) for name in fields}


def _time_changes(item: CandidateItem, text: str, inp: SubAgentInputBase) -> dict[str, datetime]:
    """The item's new time fields read from `text`, its duration kept; empty when no new time is said."""
    tz = zone(inp)
    old = item.start_at or item.due_at
    anchor = (old or inp.now).astimezone(tz)
    shift = _RE_SHIFT.search(text)
    if shift:
        new_start = anchor + _shift_delta(shift)
    else:
        marker = _RE_MOVE.search(text)
        found = extract_datetime(text[marker.end() :], now=inp.now, tz=tz) if marker else None
        if found is None:
            return {}
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
    unit = {"天": timedelta(days=1), "分钟": timedelta(minutes=1)}.get(match.group("unit"), timedelta(hours=1))
    sign = -1 if match.group("dir").startswith(("提前", "往前")) else 1
    return sign * amount * unit


def _update_preview(item: CandidateItem, changes: dict[str, Any], now: datetime) -> str:
    parts = []
    new_time = changes.get("start_at") or changes.get("due_at")
    if new_time:
        what = "的截止时间" if "due_at" in changes else ""
        target = moment_label(new_time, now)
        old = item.start_at or item.due_at
        parts.append(f"{what}从 {moment_label(old, now)} 改到 {target}" if old else f"的时间定为 {target}")
    if "title" in changes:
        parts.append(f"改名为「{changes['title']}」")
    return f"把「{item.title}」" + "，并".join(parts)
