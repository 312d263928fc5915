"""schedule_todo_agent: create, update, delete and query one user's schedules and to-dos.

The write functions only propose a db_action (a write-request body) for the user to confirm; update and delete act
on the one candidate execution resolved, query only reads the candidates it was given.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.agents.base import definition, failure, reply, the_one_candidate, unknown, zone
from engine.agents.schedule_words import derive_title, said_length, time_changes
from engine.agents.text import clock, date_label, is_whole_days, moment_label, single_day
from engine.slots import DEFAULT_LIMITS, before_holiday
from protocol.agents import (
    AgentFunctionDefinition,
    AgentName,
    AgentResponseEnvelope,
    CalendarFact,
    CandidateItem,
    SubAgentInputBase,
)
from protocol.rest import TaskItemPayload

NAME: AgentName = "schedule_todo_agent"
_SHORTEST_SCHEDULE = timedelta(minutes=15)
_RE_TITLE_CHANGE = re.compile(
    r"(?:改名为|改名叫|改名成|标题改成|标题改为|名字改成|名字改为|名称改为|重命名为)"
    r"(?P<title>[^，,。！!？?；;]+)"
)

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


def _entry_line(entry: CalendarFact, now: datetime, *, with_day: bool) -> str:
    """A calendar entry's line, marked by its calendar: "09:00 组会（日历：工作）", "作业 3（截止 …，日历：课程）"."""
    moment = entry.start_at or entry.due_at
    if moment is None:
        return f"{entry.title}（日历：{entry.source_name}）"
    when = moment_label(moment, now) if with_day else clock(moment.astimezone(now.tzinfo))
    if entry.kind == "deadline":
        return f"{entry.title}（截止 {when}，日历：{entry.source_name}）"
    if entry.all_day:
        day = moment_label(moment, now).split(" ")[0] if with_day else "全天"
        return f"{day} {entry.title}（日历：{entry.source_name}）"
    return f"{when} {entry.title}（日历：{entry.source_name}）"


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
            if whole_days and before_holiday(inp.raw_input):
                due = start - timedelta(minutes=1)  # 五一之前: by the end of the day before it
            item = TaskItemPayload(item_type="todo", title=title, due_at=due)
            preview = f"新建待办：{title}（截止 {moment_label(due, inp.now, relative=True)}）"
        else:
            length = said_length(inp.raw_input)
            if length is not None and not whole_days:  # 开部门例会，开一个小时: the length said, from the start
                end = start + length
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
        changes.update(time_changes(item, text, inp))
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
        # Baton's items and the calendars' entries in one time order, each entry marked by its calendar
        timed = [(_sort_key(i), _line(i, inp.now, with_day=day is None)) for i in items]
        timed += [
            (e.start_at or e.due_at or datetime.max.replace(tzinfo=UTC), _entry_line(e, inp.now, with_day=day is None))
            for e in inp.calendar_entries
        ]
        if not timed:
            text = f"{label}没有安排。"
        else:
            lines = [line for _, line in sorted(timed, key=lambda t: t[0])]
            text = f"{label}有 {len(lines)} 项安排：" + "；".join(lines) + "。"
        result: dict[str, Any] = {"reply": text, "items": [item.model_dump(mode="json") for item in items]}
        if inp.calendar_entries:
            result["calendar_entries"] = [entry.model_dump(mode="json") for entry in inp.calendar_entries]
        return reply(NAME, "query", result)


def _current(item: CandidateItem) -> dict[str, Any]:
    fields = ("item_type", "title", "start_at", "end_at", "due_at", "long_goal_id")
    return {name: getattr(item, name) for name in fields}


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
