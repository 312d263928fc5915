"""replan_agent: move the unfinished items of a range to the next free days, as one replan for the user to confirm.

An item moves when its latest feedback says it was not (fully) done or deferred, or when it is past and still
planned with no completed feedback; completed and cancelled items never move. A moved item keeps its clock time and
duration and steps one day at a time, from the day after `now` (or after its own day, for a later item), until it
overlaps no item that stays, no item moved before it and no busy event of the user's calendars.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo
from uuid import UUID

from engine.agents.base import definition, reply, unknown, zone
from engine.agents.text import moment_label
from protocol.agents import (
    AgentFunctionDefinition,
    AgentName,
    AgentResponseEnvelope,
    CandidateItem,
    FeedbackFact,
    SubAgentInputBase,
)
from protocol.write_payloads import ItemChange, ReplanPayload

NAME: AgentName = "replan_agent"
_MOVE_ON_FEEDBACK = frozenset({"not_completed", "partially_completed", "deferred"})
_SETTLED = frozenset({"completed", "cancelled"})
_MAX_CHANGES = 100  # ReplanPayload's bound
_PREVIEW_LINES = 20  # a longer plan is summarized so preview_text stays within its 2000 characters
_PREVIEW_MAX_CHARS = 2000
_NOTHING = "这段时间没有需要调整的安排。"

_DEFINITIONS = [
    definition(
        NAME,
        "replan",
        "把时间范围内没完成、推迟或已过期未做的安排顺延到之后的空闲日（保持时刻和时长）",
        required=["time_range"],
        needs_candidates=True,
    )
]

_Span = tuple[datetime, datetime]


def _latest(feedbacks: list[FeedbackFact]) -> dict[UUID, FeedbackFact]:
    latest: dict[UUID, FeedbackFact] = {}
    for fact in sorted(feedbacks, key=lambda f: f.occurred_at):
        latest[fact.task_item_id] = fact
    return latest


def _needs_move(item: CandidateItem, latest: FeedbackFact | None, done: set[UUID], now: datetime) -> bool:
    if item.status in _SETTLED or (latest is not None and latest.feedback_status in _SETTLED):
        return False
    if item.status == "deferred" or (latest is not None and latest.feedback_status in _MOVE_ON_FEEDBACK):
        return True
    end = item.end_at or item.due_at or item.start_at
    return end is not None and end < now and item.status == "planned" and item.id not in done


def _overlaps(span: _Span, busy: list[_Span]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in busy)


def _moment(item: CandidateItem) -> datetime:
    """The item's start, else its deadline: only items with one of them are replanned."""
    moment = item.start_at or item.due_at
    assert moment is not None, "an item without a start or a deadline is not replanned"
    return moment


def _place(item: CandidateItem, busy: list[_Span], now: datetime, tz: tzinfo) -> tuple[datetime, datetime | None]:
    """(new start or deadline, new end) for `item`: the first free day at its clock time."""
    start = _moment(item).astimezone(tz)
    duration = item.end_at - item.start_at if item.start_at and item.end_at else None
    day = max(now.astimezone(tz).date(), start.date()) + timedelta(days=1)
    while True:
        new_start = datetime.combine(day, start.timetz())
        if duration is None:
            return new_start, None
        span = (new_start, new_start + duration)
        if not _overlaps(span, busy):
            busy.append(span)
            return span
        day += timedelta(days=1)


def _change(item: CandidateItem, start: datetime, end: datetime | None) -> ItemChange:
    fields: dict[str, object] = {"task_item_id": item.id, "base_version": item.version}
    if item.start_at:
        fields["start_at"] = start
        if end is not None:
            fields["end_at"] = end
    else:
        fields["due_at"] = start
    if item.status != "planned":
        fields["status"] = "planned"  # a deferred (or started) item is planned again at its new time
    return ItemChange(**fields)


def _line(item: CandidateItem, change: ItemChange, now: datetime) -> str:
    if item.start_at:
        assert change.start_at is not None  # _change moves a scheduled item's start
        return f"「{item.title}」{moment_label(item.start_at, now)} → {moment_label(change.start_at, now)}"
    assert item.due_at is not None and change.due_at is not None  # else it moves the deadline
    return f"「{item.title}」截止 {moment_label(item.due_at, now)} → {moment_label(change.due_at, now)}"


class ReplanAgent:
    name: AgentName = NAME

    def definitions(self) -> list[AgentFunctionDefinition]:
        return list(_DEFINITIONS)

    async def run(self, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        if function != "replan":
            raise unknown(NAME, function)
        tz = zone(inp)
        latest = _latest(inp.feedbacks)
        done = {f.task_item_id for f in inp.feedbacks if f.feedback_status == "completed"}
        timed = sorted((item for item in inp.candidate_items if item.start_at or item.due_at), key=_moment)
        moving = [item for item in timed if _needs_move(item, latest.get(item.id), done, inp.now)][:_MAX_CHANGES]
        if not moving:
            return reply(NAME, function, {"reply": _NOTHING, "changes": []})
        moving_ids = {item.id for item in moving}
        busy = [
            (item.start_at, item.end_at)
            for item in inp.candidate_items
            if item.id not in moving_ids and item.start_at and item.end_at
        ]
        busy += [  # the user's calendars: a moved item never lands on a busy event
            (entry.start_at, entry.end_at)
            for entry in inp.calendar_entries
            if entry.kind == "event" and entry.busy and entry.start_at and entry.end_at
        ]
        changes = [_change(item, *_place(item, busy, inp.now, tz)) for item in moving]
        lines = [_line(item, change, inp.now) for item, change in zip(moving, changes, strict=True)]
        if len(lines) > _PREVIEW_LINES:
            lines = lines[:_PREVIEW_LINES] + [f"……共 {len(moving)} 项"]
        titles = "、".join(item.title for item in moving)
        summary = f"顺延 {len(moving)} 项未完成的安排：{titles}"[:_PREVIEW_MAX_CHARS]
        payload = ReplanPayload(changes=changes, summary=summary).model_dump(mode="json", exclude_unset=True)
        preview = "\n".join(lines)[:_PREVIEW_MAX_CHARS]
        action = {"action": "replan", "target_type": "task_item", "payload": payload, "preview_text": preview}
        return reply(
            NAME, function, {"reply": preview, "summary": summary, "changes": payload["changes"]}, db_action=action
        )
