"""Cabin temperature slot: absolute target extraction (调到二十二度 → 22) and range validation."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.slots.limits import DEFAULT_LIMITS, SlotLimits
from engine.slots.numbers import _AR_NUM, _CN_DIGITS, _CN_NUM, _NUM, Number, _match_value

# a number where a match begins: never right after a character that could begin the same number (a match there is a
# match one character earlier), which keeps a long run of digits from being tried at each of them (quadratic)
_NUM_FIRST = rf"(?:(?<!\d){_AR_NUM}|(?<![{_CN_DIGITS}十]){_CN_NUM})"
_TEMP_WITH_UNIT = re.compile(rf"(?P<num>{_NUM_FIRST})(?:摄氏度|度|℃|°C|°)(?P<half>半)?")
_TEMP_SET_VERB = re.compile(
    rf"(?:调到|调成|调至|调为|设成|设为|设到|设置为|设置成|设置到|设在|定在|开到|开成|打到|温度(?:是|为)?|空调)"
    rf"\s*(?P<num>{_NUM})(?P<half>半)?"
)
_TEMP_CONTEXT = re.compile(r"温度|空调|冷气|暖气|制冷|制热|℃")
_TEMP_OTHER_DEVICE = re.compile(r"风量|风速|音量|声音|亮度|档位|座椅|车窗")
_TEMP_TARGET_BEFORE = re.compile(r"(?:到|成|为|至|在)\s*$")
_TEMP_RELATIVE_BEFORE = re.compile(r"(?:高|低|升|降|加|减|多|少|上调|下调)了?\s*$")
_NOT_TEMP_AFTER = set("点小分个档级号月日天年岁秒%")


@dataclass(frozen=True)
class _TempCandidate:
    value: Number
    position: int
    targeted: bool


def _temp_candidate(text: str, match: re.Match[str]) -> _TempCandidate | None:
    before = text[: match.start("num")]
    if _TEMP_RELATIVE_BEFORE.search(before):
        return None
    value = _match_value(match)
    if value is None:
        return None
    return _TempCandidate(value, match.start("num"), bool(_TEMP_TARGET_BEFORE.search(before)))


def _temp_candidates(text: str) -> list[_TempCandidate]:
    found = [_temp_candidate(text, m) for m in _TEMP_WITH_UNIT.finditer(text)]
    if _TEMP_CONTEXT.search(text) and not _TEMP_OTHER_DEVICE.search(text):
        for match in _TEMP_SET_VERB.finditer(text):
            if text[match.end() : match.end() + 1] not in _NOT_TEMP_AFTER:
                found.append(_temp_candidate(text, match))
    unique: dict[int, _TempCandidate] = {}
    for candidate in found:
        if candidate is not None:
            unique.setdefault(candidate.position, candidate)  # the unit pattern (度半) wins
    return list(unique.values())


def validate_temperature(value: Number | None, limits: SlotLimits = DEFAULT_LIMITS) -> bool:
    """True when `value` is a settable cabin temperature within `limits`."""
    return value is not None and limits.temperature_min <= value <= limits.temperature_max


def extract_temperature(text: str, limits: SlotLimits = DEFAULT_LIMITS) -> Number | None:
    """Absolute target temperature (调到二十二度 → 22); relative phrases (调高两度, 高一点) give None.

    Out-of-range values are still returned (check with `validate_temperature`); `limits` only breaks
    ties when several temperatures are mentioned: a value after 到/成/为 wins, then an in-range one.
    """
    candidates = _temp_candidates(text or "")
    if not candidates:
        return None

    def rank(candidate: _TempCandidate) -> tuple[bool, bool, int]:
        return not candidate.targeted, not validate_temperature(candidate.value, limits), candidate.position

    return min(candidates, key=rank).value
