"""Tunable bounds shared by the slot extractors and validators: SlotLimits and DEFAULT_LIMITS."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class SlotLimits:
    """Tunable bounds used by the extractors and validators."""

    temperature_min: float = 16
    temperature_max: float = 32
    order_id_min_length: int = 4
    event_minutes: int = 60

    def __post_init__(self) -> None:
        if self.temperature_min > self.temperature_max:
            raise ValueError("temperature_min must not exceed temperature_max")
        if self.order_id_min_length < 1 or self.event_minutes < 1:
            raise ValueError("order_id_min_length and event_minutes must be positive")

    @property
    def event_duration(self) -> timedelta:
        return timedelta(minutes=self.event_minutes)


DEFAULT_LIMITS = SlotLimits()
