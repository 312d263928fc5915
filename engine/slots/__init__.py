"""Rule-based Chinese slot extractors: numbers, temperatures, order ids, destinations and date/time ranges."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, tzinfo
from typing import Protocol

from engine.slots.dates import before_holiday
from engine.slots.datetime_range import TimeRange, extract_datetime
from engine.slots.destination import extract_destination
from engine.slots.limits import DEFAULT_LIMITS, SlotLimits
from engine.slots.numbers import Number as Number
from engine.slots.numbers import parse_chinese_number
from engine.slots.order_id import extract_order_id
from engine.slots.temperature import extract_temperature, validate_temperature

__all__ = [
    "DEFAULT_LIMITS",
    "SlotLimits",
    "SlotSpecLike",
    "TimeRange",
    "before_holiday",
    "extract_datetime",
    "extract_destination",
    "extract_order_id",
    "extract_slots",
    "extract_temperature",
    "parse_chinese_number",
    "validate_temperature",
]


class SlotSpecLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str: ...


def _slot_value(slot_type: str, text: str, *, now: datetime, tz: tzinfo, limits: SlotLimits) -> object | None:
    if slot_type == "temperature":
        value = extract_temperature(text, limits)
        return value if validate_temperature(value, limits) else None
    if slot_type == "order_id":
        return extract_order_id(text, limits)
    if slot_type == "destination":
        return extract_destination(text)
    if slot_type == "datetime":
        found = extract_datetime(text, now=now, tz=tz, limits=limits)
        return found.to_dict() if found else None
    if slot_type == "number":
        return parse_chinese_number(text)
    return None  # "text" slots are filled by the dialogue layer, not here


def extract_slots(
    text: str, specs: Iterable[SlotSpecLike], *, now: datetime, tz: tzinfo, limits: SlotLimits = DEFAULT_LIMITS
) -> dict[str, object]:
    """Values for the slots found in `text`, keyed by spec name; missing or invalid slots are left out.

    An out-of-range temperature is left out so the caller asks again; datetimes are JSON-friendly dicts.
    """
    found: dict[str, object] = {}
    for spec in specs:
        value = _slot_value(spec.type, text, now=now, tz=tz, limits=limits)
        if value is not None:
            found[spec.name] = value
    return found
