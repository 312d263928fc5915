"""Seed 000's Scheduling chain, deterministic: task level, a draft in the user's free time, questions."""

from engine.scheduling.chain import SchedulingChain, plan, window
from engine.scheduling.free_time import (
    AllBusyTimes,
    BusyTimes,
    CalendarBusyTimes,
    Interval,
    ItemBusyTimes,
    WorkingHours,
)
from engine.scheduling.level import Signal
from engine.scheduling.texts import DraftFacts, DraftTexts, SchedulingTexts, TemplateTexts

__all__ = [
    "AllBusyTimes",
    "BusyTimes",
    "CalendarBusyTimes",
    "DraftFacts",
    "DraftTexts",
    "Interval",
    "ItemBusyTimes",
    "SchedulingChain",
    "SchedulingTexts",
    "Signal",
    "TemplateTexts",
    "WorkingHours",
    "plan",
    "window",
]
