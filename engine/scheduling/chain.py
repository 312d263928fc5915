"""Seed 000's Scheduling module, deterministic: SchedulingRouter (the task level) → DraftPlan (L1/L2: candidate
slots in the user's free time) or DraftAction (L3: a first step with start instructions) → AskQuestion (what is
missing, the next steps). The facts come from rules and the store; only the texts go through `SchedulingTexts`."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from engine.scheduling.draft import draft, window_of
from engine.scheduling.free_time import BusyTimes, Interval, WorkingHours, user_zone, zone_name
from engine.scheduling.level import Signal, level_of
from engine.scheduling.texts import DraftFacts, SchedulingTexts, TemplateTexts
from engine.scheduling.words import read
from engine.streaming import OnDelta
from protocol.scheduling import PlanSlot, SchedulingDraft


class SchedulingChain:
    def __init__(self, texts: SchedulingTexts | None = None, *, texts_budget_s: float = 0.0) -> None:
        """`texts`: who writes the texts (templates by default); `texts_budget_s`: the most it may wait on a model
        (0 for templates): the agent's phase grows by it."""
        self._texts = texts or TemplateTexts()
        self.texts_budget_s = texts_budget_s

    async def run(
        self,
        text: str,
        *,
        now: datetime,
        busy: list[Interval],
        profile: dict[str, Any],
        signal: Signal | None = None,
        on_delta: OnDelta | None = None,
    ) -> SchedulingDraft:
        """The draft for `text` said at `now` (aware). `busy`: what takes the user's time around the window the
        request names (`window(...)` says which); `profile`: its `timezone` and `working_hours` are read."""
        tz = user_zone(profile, now)
        local = now.astimezone(tz)
        words = read(text, local)
        level = level_of(text, words, signal)
        hours = WorkingHours.of(profile)
        drafted = draft(words, level.level, now=local, tz=tz, hours=hours, busy=busy)
        facts = DraftFacts(
            text=text,
            title=words.title,
            level=level.level,
            slots=drafted.slots,
            minutes=drafted.minutes,
            window=drafted.window,
            now=local,
            working_hours=hours.label(),
            missing=level.missing,
            notes=drafted.notes,
        )
        texts = await self._texts.write(facts, on_delta=on_delta)
        many = len(drafted.slots) > 1
        return SchedulingDraft(
            task_level=level.level,
            kind="action" if level.level == "L3" else "plan",
            title=words.title,
            draft_text=texts.draft_text,
            slots=[
                PlanSlot(
                    title=f"{words.title}（{i}/{len(drafted.slots)}）" if many else words.title,
                    start_at=s.start,
                    end_at=s.end,
                )
                for i, s in enumerate(drafted.slots, 1)
            ],
            start_instructions=texts.start_instructions,
            constraints_and_missing_info=[level.reason, *drafted.notes],
            missing=level.missing,
            questions=texts.questions,
            next_steps_suggestion=texts.next_steps_suggestion,
            time_zone=zone_name(tz, now),
            working_hours=hours.label(),
            texts_by=texts.written_by,
        )


def window(text: str, *, now: datetime, profile: dict[str, Any]) -> Interval:
    """The time the chain may plan into for `text`, whatever its level: read the busy times of this range before
    `run` (a plan's window holds an action's)."""
    tz = user_zone(profile, now)
    local = now.astimezone(tz)
    return window_of(read(text, local), "L2", local)


async def plan(
    chain: SchedulingChain,
    text: str,
    *,
    user_id: UUID,
    now: datetime,
    busy_times: BusyTimes,
    profile: dict[str, Any],
    signal: Signal | None = None,
) -> SchedulingDraft:
    """`chain.run` over the busy times `busy_times` reports for the request's window."""
    span = window(text, now=now, profile=profile)
    busy = await busy_times.busy(user_id, span.start, span.end)
    return await chain.run(text, now=now, busy=busy, profile=profile, signal=signal)
