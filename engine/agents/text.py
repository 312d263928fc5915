"""The sub-agents' text side: the optional LLM TextWriter and the Chinese labels of dates and times.

Templates are the real path: a writer only rephrases facts the agent already computed, and its answer is used only
when it arrives in time; the facts themselves always travel in the envelope's structured result.
"""

from __future__ import annotations

import asyncio
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any, Protocol

from engine.deadline import phase_time_left

DEFAULT_WRITER_TIMEOUT_S = 8.0
# inside a bounded phase (a served agent's), a writer gets at most this share of what is left of it: the template
# and the message's later steps keep the rest, so a slow writer means the template, never a cancelled frame
WRITER_SHARE_OF_PHASE = 0.5
_RELATIVE_DAYS = {-2: "前天", -1: "昨天", 0: "今天", 1: "明天", 2: "后天"}
# a date-only deadline means "by the end of that day"; 23:59 reads better to a user than the next midnight
DAY_END = time(23, 59)


class TextWriter(Protocol):
    """An optional LLM text generator; `None` means "use the template"."""

    async def write(self, prompt: str, *, facts: dict[str, Any], timeout_s: float) -> str | None: ...


async def compose(
    writer: TextWriter | None,
    prompt: str,
    *,
    facts: dict[str, Any],
    template: str,
    timeout_s: float,
    max_chars: int | None = None,
) -> str:
    """The writer's text when it answers within `timeout_s` with non-blank text (at most `max_chars`), else
    `template`; a writer that times out counts as no answer, any other error of the writer propagates. Inside a
    `Deadline.phase` the wait is also cut to `WRITER_SHARE_OF_PHASE` of the time the phase has left."""
    if writer is None:
        return template
    left = phase_time_left()
    if left is not None:
        timeout_s = min(timeout_s, left * WRITER_SHARE_OF_PHASE)
        if timeout_s <= 0:
            return template
    try:
        text = await asyncio.wait_for(writer.write(prompt, facts=facts, timeout_s=timeout_s), timeout_s)
    except TimeoutError:
        return template
    if not text or not text.strip() or (max_chars is not None and len(text) > max_chars):
        return template
    return text.strip()


def date_label(day: date, today: date, *, relative: bool = False) -> str:
    """12月2日 (the year only when it is not `today`'s); with `relative`, 今天/明天/… for nearby days."""
    if relative and (day - today).days in _RELATIVE_DAYS:
        return _RELATIVE_DAYS[(day - today).days]
    if day.year != today.year:
        return f"{day.year}年{day.month}月{day.day}日"
    return f"{day.month}月{day.day}日"


def clock(moment: datetime) -> str:
    return moment.strftime("%H:%M")


def moment_label(moment: datetime, now: datetime, *, relative: bool = False) -> str:
    """`moment` in `now`'s zone as "12月2日 15:00" (or "明天 15:00" with `relative`)."""
    local = moment.astimezone(now.tzinfo)
    return f"{date_label(local.date(), now.date(), relative=relative)} {clock(local)}"


def at_day_end(day: date, tz: tzinfo | None) -> datetime:
    return datetime.combine(day, DAY_END, tzinfo=tz)


def is_whole_days(start: datetime, end: datetime, tz: tzinfo) -> bool:
    """Whether [start, end) covers whole local days (an all-day or multi-day range)."""
    start, end = start.astimezone(tz), end.astimezone(tz)
    return start.time() == time() and end.time() == time() and end - start >= timedelta(days=1)


def single_day(start: datetime, end: datetime, tz: tzinfo) -> date | None:
    """The local day when [start, end) lies within one day, else None."""
    start, end = start.astimezone(tz), end.astimezone(tz)
    last = (end - timedelta(microseconds=1)).date() if end > start else start.date()
    return start.date() if last == start.date() else None
