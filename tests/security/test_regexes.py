"""Issue 34, item 10. Every regex that reads user text works in time linear in the text: the module-level compiled
patterns under engine/, and every pattern an engine holds once built over a shipped pack (its rules, keywords, social
patterns, the clause and planner patterns of config/baton.yaml).

Each pattern runs over long adversarial texts (runs of digits, numerals and of each character the pattern names) at
two lengths, n and 4n; its work at 4n over its work at n must stay near 4 (quadratic is 16). Measured in one run,
as a ratio of the best of several timings: no absolute time is asserted. n is half the longest text a turn carries
(`max_text_chars`), so that a quadratic pattern costs seconds, not minutes, to catch."""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

import engine
from tests.support.fakes import Rig, base_settings

N = base_settings().max_text_chars // 2
RATIO = 9.0  # linear is 4, quadratic 16: generous either way
SUSPECT = 6.0  # a single timing this far over linear is timed again, several times
NOISE_S = 0.0005  # below this at 4n a pattern's whole work is too small to time; it is not compared
ALWAYS = ["1", "一", "十", "1.", "一点", " ", "a", "，", "个", "半"]


def module_patterns() -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            for i, pattern in enumerate(_patterns_in(value, depth=2)):
                found[f"{info.name}.{name}[{i}]"] = pattern
    return found


def _patterns_in(value: Any, depth: int) -> Iterator[re.Pattern[str]]:
    if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
        yield value
    elif depth > 0 and isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _patterns_in(item, depth - 1)
    elif depth > 0 and isinstance(value, dict):
        for item in value.values():
            yield from _patterns_in(item, depth - 1)


def engine_patterns(pack: str) -> dict[str, re.Pattern[str]]:
    """What a built engine holds, found by walking its objects (engine.* classes and containers only)."""
    found: dict[str, re.Pattern[str]] = {}
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [(pack, Rig(pack).engine)]
    while stack:
        where, value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, re.Pattern):
            if isinstance(value.pattern, str):
                found[f"{where}"] = value
        elif isinstance(value, dict):
            stack.extend((f"{where}[{k!r}]", v) for k, v in value.items())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
        elif type(value).__module__.startswith("engine.") and hasattr(value, "__dict__"):
            stack.extend((f"{where}.{k}", v) for k, v in vars(value).items())
        elif type(value).__module__.startswith("engine.") and hasattr(value, "__slots__"):
            stack.extend((f"{where}.{k}", getattr(value, k)) for k in value.__slots__ if hasattr(value, k))
    return found


def every_pattern() -> dict[str, re.Pattern[str]]:
    patterns = module_patterns()
    for pack in ("cockpit", "timeflow"):
        patterns.update(engine_patterns(pack))
    unique: dict[tuple[str, int], tuple[str, re.Pattern[str]]] = {}
    for where, pattern in patterns.items():
        unique.setdefault((pattern.pattern, pattern.flags), (where, pattern))
    return dict(unique.values())


def adversarial(pattern: re.Pattern[str]) -> list[str]:
    """The units a text repeats: fixed ones, and the characters the pattern names (most frequent first)."""
    named = [c for c in pattern.pattern if not c.isascii() or c.isalnum()]
    by_count = sorted(set(named), key=lambda c: (-named.count(c), c))
    return list(dict.fromkeys(ALWAYS + by_count[:16]))


def work(pattern: re.Pattern[str], text: str, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in pattern.finditer(text):
            pass
        best = min(best, time.perf_counter() - started)
    return best


def superlinear(pattern: re.Pattern[str]) -> list[str]:
    """The units over which `pattern`'s work grows faster than linearly, each with its ratio."""
    found = []
    for unit in adversarial(pattern):
        short, long = unit * (N // len(unit)), unit * (4 * N // len(unit))
        if work(pattern, long) < NOISE_S:
            continue
        if work(pattern, long) / max(work(pattern, short), 1e-9) <= SUSPECT:
            continue
        ratio = work(pattern, long, repeat=3) / work(pattern, short, repeat=5)  # confirm, without the noise
        if ratio > RATIO:
            found.append(f"{unit!r}: x{ratio:.1f}")
    return found


@pytest.fixture(scope="module")
def patterns() -> dict[str, re.Pattern[str]]:
    return every_pattern()


def test_the_scan_finds_the_patterns_of_the_engine_and_of_the_packs(patterns):
    names = set(patterns)
    assert any(n.startswith("engine.agents.feedback._RE_DURATION") for n in names)
    assert any(n.startswith("engine.slots.temperature._TEMP_WITH_UNIT") for n in names)
    assert any(n.startswith("cockpit") for n in names), "the patterns a pack's rules compile to"
    assert len(patterns) > 50


def test_every_pattern_works_in_linear_time_on_adversarial_text(patterns):
    slow = {where: units for where, pattern in patterns.items() if (units := superlinear(pattern))}
    assert not slow, "\n".join(f"{where} ({patterns[where].pattern[:80]!r}): {units}" for where, units in slow.items())


def test_the_scan_catches_a_quadratic_pattern():
    # the shape of the patterns this scan was written for: a number run tried from each of its characters
    assert superlinear(re.compile(r"(?P<n>\d+(?:\.\d+)?)(?:度|℃)"))
