"""The form of an LLM plan: the JSON schema it must follow (for vLLM structured outputs), how its JSON is read
out of a reply (`parse_plan_text`) and the form each slot value takes in it (`SlotValues`), which no JSON schema
can say (a temperature in range, an order number).

The schema is inline (no `$ref`, no `$defs`): xgrammar and the other guided-decoding backends compile inline
schemas most reliably. It fixes the plan's shape and the catalog's executable intent ids; which slots belong
to which intent, and everything else about the plan as a whole (dependencies on earlier steps only, no cycles,
forced confirmations), is `engine.llm.plan_validation`'s job.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, tzinfo
from typing import Any, get_args

from engine.pack import SPECIAL_INTENTS, Pack, SlotSpec
from engine.slots import (
    SlotLimits,
    TimeRange,
    extract_datetime,
    extract_destination,
    extract_order_id,
    extract_temperature,
    parse_chinese_number,
    validate_temperature,
)
from protocol.workflow import StepCondition, WorkflowType

# the operators the executor's condition_holds evaluates, read from the wire model so the two cannot drift
CONDITION_OPERATORS: tuple[str, ...] = get_args(StepCondition.model_fields["operator"].annotation)
PLAN_TYPES: tuple[str, ...] = tuple(t.value for t in WorkflowType)
MAX_RAW_CHARS = 64_000  # a plan of a few steps is a few hundred characters; more is a runaway generation
_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.S)


def executable_intents(pack: Pack) -> list[str]:
    """The pack's intent ids a plan step may name, in catalog order: every intent but __social__ and
    __out_of_scope__ (they are turn outcomes, not actions)."""
    return [i.id for i in pack.intents if i.id not in SPECIAL_INTENTS]


def plan_json_schema(pack: Pack, *, max_steps: int) -> dict[str, Any]:
    """The schema of an LLM plan over `pack`'s catalog, at most `max_steps` steps (settings.planner.max_steps):

    {"steps": [{"intent_id": <executable intent id>, "slots": {...}, "depends_on": [<step number>],
                "condition": null | {"step": <step number>, "field": str, "op": <operator>, "value": ...},
                "requires_confirmation": bool}],
     "type": "single" | "sequence" | "conditional"}

    Step numbers are 1-based positions in `steps`. Only `steps` and each step's `intent_id` are required: every
    token is a decode step (tens of ms on a CPU), and the validator reads a missing key as its default (no
    slots, no dependency, no condition, the intent's own confirmation rule, the type from the steps).
    """
    step_number = {"type": "integer", "minimum": 1, "maximum": max_steps}
    scalar = [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]
    condition = {
        "type": "object",
        "properties": {
            "step": step_number,
            "field": {"type": "string", "minLength": 1},
            "op": {"type": "string", "enum": list(CONDITION_OPERATORS)},
            # a scalar for equals / not_equals, a list for in
            "value": {"anyOf": [*scalar, {"type": "array", "items": {"anyOf": scalar}}]},
        },
        "required": ["step", "field", "op", "value"],
        "additionalProperties": False,
    }
    step = {
        "type": "object",
        "properties": {
            "intent_id": {"type": "string", "enum": executable_intents(pack)},
            "slots": {"type": "object"},
            "depends_on": {"type": "array", "items": step_number, "maxItems": max(max_steps - 1, 0)},
            "condition": {"anyOf": [{"type": "null"}, condition]},
            "requires_confirmation": {"type": "boolean"},
        },
        "required": ["intent_id"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps},
            "type": {"type": "string", "enum": list(PLAN_TYPES)},
        },
        "required": ["steps"],
        "additionalProperties": False,
    }


def parse_plan_text(raw: str) -> tuple[Any, str | None]:
    """The JSON in a model reply: the whole text, else the first ``` fence that parses, else the first JSON
    object in the prose. Returns (value, how it was found) or (None, None)."""
    body = raw.strip()
    try:
        return json.loads(body), None
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes, no plan either
        pass
    for fence in _FENCE.finditer(body):
        try:
            return json.loads(fence.group(1)), "took the JSON out of a ``` fence"
        except (ValueError, RecursionError):
            continue
    decoder, start = json.JSONDecoder(), body.find("{")
    for _ in range(32):  # bounded: prose full of braces is not worth scanning further
        if start < 0:
            break
        try:
            value, _end = decoder.raw_decode(body, start)
            if isinstance(value, dict):
                return value, "took the first JSON object out of the surrounding text"
        except (ValueError, RecursionError):
            pass
        start = body.find("{", start + 1)
    return None, None


class SlotValues:
    """Reads a plan's slot value into the form the engine's extractors give (engine.slots: a temperature as a
    number within `limits`, an upper-cased order id, a datetime as TimeRange.to_dict()), or says why it cannot
    be one. `tz` and `now` resolve a datetime said in words (明天下午三点)."""

    def __init__(self, *, limits: SlotLimits, tz: tzinfo, now: datetime) -> None:
        self._limits, self._tz, self._now = limits, tz, now.astimezone(tz)

    def read(self, spec: SlotSpec, value: Any) -> tuple[Any, str | None]:
        """(the value, None) or (None, why not)."""
        lim = self._limits
        if spec.type in ("temperature", "number"):
            words = (lambda t: extract_temperature(t, lim)) if spec.type == "temperature" else parse_chinese_number
            number = _number(value, words)
            if number is None:
                return None, f"{value!r} is no {spec.type}"
            if spec.type == "temperature" and not validate_temperature(number, lim):
                return None, f"{number:g}° is outside {lim.temperature_min:g}–{lim.temperature_max:g}°"
            return number, None
        if spec.type == "datetime":
            return self._datetime(value)
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            return None, f"{value!r} is no {spec.type}"
        said = str(value).strip()
        if spec.type == "order_id":
            # a bare number is an id only after 订单号 (engine.slots.order_id keeps phone numbers out of words)
            found = extract_order_id(said, lim) or extract_order_id(f"订单号{said}", lim)
            return (found, None) if found else (None, f"{value!r} is no order id")
        if spec.type == "destination":
            return extract_destination(said) or said, None  # 去人民广场 → 人民广场; a bare place name as is
        return said, None

    def _datetime(self, value: Any) -> tuple[Any, str | None]:
        """An ISO time (lasting the default event length), words, or a {start, end, text, all_day} dict."""
        if isinstance(value, str):
            start = self._iso(value)
            if start is not None:
                return TimeRange(start, start + self._limits.event_duration, value, False).to_dict(), None
            found = extract_datetime(value, now=self._now, tz=self._tz, limits=self._limits)
            return (found.to_dict(), None) if found else (None, f"{value!r} is no date or time")
        if not isinstance(value, dict):
            return None, f"{value!r} is no date or time"
        start, end = self._iso(value.get("start")), self._iso(value.get("end"))
        if value.get("end") is None and start is not None:
            end = start + self._limits.event_duration
        all_day, said = value.get("all_day", False), value.get("text", "")
        if start is None or end is None or end <= start or not isinstance(all_day, bool) or not isinstance(said, str):
            return None, f"{value!r} is no time range (ISO start before end, text, all_day)"
        return TimeRange(start, end, said, all_day).to_dict(), None

    def _iso(self, value: Any) -> datetime | None:
        try:
            found = datetime.fromisoformat(value.strip()) if isinstance(value, str) else None
        except ValueError:
            return None
        if found is None:
            return None
        return found.replace(tzinfo=self._tz) if found.tzinfo is None else found.astimezone(self._tz)


def _number(value: Any, words: Any) -> int | float | None:
    """A JSON number, a numeric string, or words (二十二度) read by `words`; 22.0 becomes 22 as the extractors give."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = words(value)
    if value is None or not math.isfinite(value):
        return None
    return int(value) if float(value).is_integer() else float(value)
