"""Seed 000's SchedulingRouter, by rules: the task level of a planning request and what it leaves out.

L3 (action) is one concrete step: 先… / 马上… / a single day or part of a day without a frequency. L2 (plan) is an
outcome over several sessions: a period, a deadline, a frequency, a count or a total effort, or a request to arrange
one. L1 (idea) is a wish with none of these. The pack's classifier, where it answered, only breaks a tie the words
leave open: its long-task split leans to a plan, its schedule create to an action.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from engine.scheduling.words import RequestWords
from protocol.scheduling import MissingInfo, TaskLevel

_RE_ARRANGE = re.compile(r"(?:帮我|给我|替我).{0,6}(?:安排|规划|计划|排一下|排个|排排|做个.{0,4}(?:安排|计划))")
_PLAN_INTENTS = frozenset({"long_task_split", "replan"})
_ACTION_INTENTS = frozenset({"schedule_create"})


@dataclass(frozen=True)
class Signal:
    """The pack's classifier on the request: its top intent and score (None where it did not answer)."""

    intent: str | None = None
    score: float = 0.0


@dataclass(frozen=True)
class Level:
    level: TaskLevel
    reason: str
    missing: list[MissingInfo]


def _frame(words: RequestWords) -> bool:
    return any((words.period, words.daily, words.per_week, words.sessions, words.several, words.total_minutes))


def _one_day(words: RequestWords) -> bool:
    return words.period is not None and words.period[1] - words.period[0] <= timedelta(days=1)


def level_of(text: str, words: RequestWords, signal: Signal | None = None) -> Level:
    repeated = words.daily or words.per_week or words.sessions or words.several
    if words.first_step and not repeated:
        return Level("L3", "先做一步", [])
    if _one_day(words) and not repeated and not (words.total_minutes and words.total_minutes > 180):
        return Level("L3", "只说了一天里的一件事", [])
    if _frame(words) or _RE_ARRANGE.search(text):
        return Level("L2", "有时间范围、频率、次数或总量", _missing(words, "L2"))
    if words.wish:
        return Level("L1", "只是一个想法，还没有具体目标和时间", _missing(words, "L1"))
    if signal is not None and signal.intent in _PLAN_INTENTS:
        return Level("L2", f"分类器判为 {signal.intent}", _missing(words, "L2"))
    if signal is not None and signal.intent in _ACTION_INTENTS:
        return Level("L3", f"分类器判为 {signal.intent}", [])
    return Level("L1", "没有时间范围、频率或次数", _missing(words, "L1"))


def _missing(words: RequestWords, level: TaskLevel) -> list[MissingInfo]:
    missing: list[MissingInfo] = ["goal"] if level == "L1" else []
    if words.period is None:
        missing.append("period")
    if words.session_minutes is None and words.total_minutes is None:
        missing.append("duration")
    return missing
