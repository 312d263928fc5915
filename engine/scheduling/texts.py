"""The chain's texts. `SchedulingTexts` is the seam: the templates below write them from the computed facts today;
seed 000's DSPy programs (DraftPlan, DraftAction, AskQuestion) can implement the same interface once an LLM that
generates is configured. Either way the facts — level, slots, what is missing — are the chain's, never the texts'."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from engine.scheduling.free_time import Interval
from engine.streaming import OnDelta
from protocol.scheduling import MissingInfo, TaskLevel

LEVEL_NAMES = {"L1": "想法", "L2": "方案", "L3": "行动"}


@dataclass(frozen=True)
class DraftFacts:
    """Everything the texts may say, computed before any text is written."""

    text: str  # what the user said
    title: str
    level: TaskLevel
    slots: list[Interval]
    minutes: int
    window: Interval
    now: datetime  # in the user's zone
    working_hours: dict[str, str]
    missing: list[MissingInfo]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DraftTexts:
    draft_text: str
    start_instructions: str | None
    questions: list[str]
    next_steps_suggestion: str
    written_by: str = "template"


class SchedulingTexts(Protocol):
    async def write(self, facts: DraftFacts, *, on_delta: OnDelta | None = None) -> DraftTexts:
        """The texts for `facts`; `on_delta`, when given, hears each generated piece once it passed its checks, in
        the order `said` joins them (a writer of templates sends none)."""
        ...


def said(draft_text: str, start_instructions: str | None, questions: list[str], next_steps: str) -> str:
    """The draft as the user reads it: the draft, how to start (an action), the questions, what to do next."""
    lines = [draft_text, start_instructions or "", *questions, next_steps]
    return "\n".join(line for line in lines if line)[:2000]


_NEAR_DAYS = {0: "今天", 1: "明天", 2: "后天"}
_WEEKDAYS = "一二三四五六日"


def slot_label(slot: Interval, now: datetime) -> str:
    """今天 18:00–19:00, or 12月10日（周四）18:00–19:00 further on; in `now`'s zone."""
    start, end = slot.start.astimezone(now.tzinfo), slot.end.astimezone(now.tzinfo)
    ahead = (start.date() - now.date()).days
    day = _NEAR_DAYS.get(ahead) or f"{start.month}月{start.day}日（周{_WEEKDAYS[start.weekday()]}）"
    return f"{day} {start:%H:%M}–{end:%H:%M}"


_QUESTIONS: dict[MissingInfo, str] = {
    "goal": "关于「{title}」，你具体想达到什么程度？比如先入门、学会某一项，还是坚持多久？",
    "period": "你打算在什么时间范围内做「{title}」？比如这周、这个月，或者某天之前。",
    "duration": "每次大概想花多长时间？我先按每次 {minutes} 分钟排的。",
}


def questions(facts: DraftFacts) -> list[str]:
    return [_QUESTIONS[m].format(title=facts.title, minutes=facts.minutes) for m in facts.missing]


class TemplateTexts:
    """Seed 000's outputs written from templates over the facts."""

    async def write(self, facts: DraftFacts, *, on_delta: OnDelta | None = None) -> DraftTexts:
        hours = f"{facts.working_hours['start']}–{facts.working_hours['end']}"
        slots = "；".join(slot_label(s, facts.now) for s in facts.slots)
        level = f"{facts.level} {LEVEL_NAMES[facts.level]}级"
        if facts.level == "L3":
            if facts.slots:
                text = f"先做「{facts.title}」（{level}）：{slots}，约 {facts.minutes} 分钟，已避开你已有的安排。"
                start = (
                    f"到 {slot_label(facts.slots[0], facts.now)} 开始：先花 5 分钟把「{facts.title}」需要的东西准备好，"
                    f"然后从最小的一部分做起，做满 {facts.minutes} 分钟就算完成这一步。"
                )
                suggestion = "回复“确认”把这一步加入日程；想换时间就直接说新的时间。"
            else:
                text = (
                    f"先做「{facts.title}」（{level}），但最近的工作时间（{hours}）里"
                    f"没有找到 {facts.minutes} 分钟的空档。"
                )
                start = f"先花 5 分钟把「{facts.title}」需要的东西准备好，有空时从最小的一部分做起。"
                suggestion = "告诉我一个你方便的时间，我再帮你排。"
            return DraftTexts(text, start, questions(facts), suggestion)
        if facts.slots:
            text = (
                f"「{facts.title}」的草案（{level}）：在你的空闲时间（每天 {hours}，已避开已有安排）里排了 "
                f"{len(facts.slots)} 次，每次 {facts.minutes} 分钟：{slots}。"
            )
            suggestion = (
                "先回答上面的问题，我再调整草案；也可以回复“确认”先把这些时段加入日程。"
                if facts.missing
                else "回复“确认”把这些时段加入日程；之后可以说“复盘这周”看进度。"
            )
        else:
            text = f"「{facts.title}」（{level}）：这段时间的工作时间（{hours}）里没有找到 {facts.minutes} 分钟的空档。"
            suggestion = "换一个时间范围，或者缩短每次的时长，我再帮你排。"
        if facts.notes:
            text += "（" + "；".join(facts.notes) + "）"
        return DraftTexts(text, None, questions(facts), suggestion)
