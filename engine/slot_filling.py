"""Slot values for a turn: extraction from the words (seed 003 §13), the slot names an intent accepts, and the
values it must refuse (a temperature outside the cabin's range)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any

from engine.errors import InvalidInput
from engine.pack import Intent, SlotSpec
from engine.slots import SlotLimits, extract_slots, validate_temperature

FREE_TEXT_SLOTS = frozenset({"destination", "text"})


class SlotFiller:
    def __init__(self, *, limits: SlotLimits, tz: tzinfo, clock: Callable[[], datetime]) -> None:
        self._limits = limits
        self._tz = tz
        self._clock = clock

    def extract(self, text: str, specs: list[SlotSpec], free_text: bool = False) -> dict[str, Any]:
        """Slot values found in `text`; with `free_text`, a short answer fills a pending destination/text slot as is."""
        found = extract_slots(text, specs, now=self._clock().astimezone(self._tz), tz=self._tz, limits=self._limits)
        if free_text and text.strip():
            for spec in specs:
                if spec.name not in found and spec.type in FREE_TEXT_SLOTS:
                    found[spec.name] = text.strip(" ，。！？,.!?")
        return found

    @staticmethod
    def known(intent: Intent, slots: dict[str, Any]) -> dict[str, Any]:
        """`slots` when the intent has every one of them; InvalidInput naming the first it lacks."""
        unknown = sorted(set(slots) - {s.name for s in intent.slots})
        if unknown:
            raise InvalidInput(f"Intent '{intent.id}' has no slot '{unknown[0]}'.", field=f"slots.{unknown[0]}")
        return slots

    def invalid(self, intent: Intent, slots: dict[str, Any]) -> SlotSpec | None:
        """The first slot whose value the intent cannot take, if any."""
        for spec in intent.slots:
            if spec.type == "temperature" and spec.name in slots:
                try:
                    value = float(slots[spec.name])
                except (TypeError, ValueError):
                    return spec
                if not validate_temperature(value, self._limits):
                    return spec
        return None
