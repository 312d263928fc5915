"""Context rewrite of short follow-ups into explicit commands (seed 003 §11): AC up/down, next/previous track,
route preferences."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.slots import parse_chinese_number

AC_FAMILY = frozenset({"cabin_set_ac", "cabin_ac_on", "cabin_fan_up", "cabin_fan_down"})
MUSIC_FAMILY = frozenset({"cabin_play_music", "cabin_music_next", "cabin_music_previous", "cabin_music_pause"})
NAV_FAMILY = frozenset({"cabin_nav_to"})

_NUM = r"(?:\d+(?:\.\d+)?|[一二两三四五六七八九十半]+)"
_FILLER = r"(?:再|稍微|稍|给我|帮我|麻烦|请|往|把温度|温度|空调|调|弄|开)*"
_TAIL = r"(?:一点|一些|点|些|一点儿|点儿)?(?:吧|呗|啊|呀|哦|了)?[。！!,，~]*"
_AC_STEP = re.compile(rf"^{_FILLER}(?P<dir>高|低|升|降|暖和?|凉快?|热|冷)(?:(?P<n>{_NUM})度|{_TAIL}){_TAIL}$")
_AC_FEEL = re.compile(r"^(?:有点|有些|好|太|还是|还是有点)(?P<feel>冷|热|凉|闷)(?:了|啊|呀|吧)?[。！!~]*$")
_NEXT = re.compile(r"(再来一首|换一首|换首|下一首|下首|切歌|切一首|来首别的|换个歌|换歌|不好听)")
_PREV = re.compile(r"(上一首|上首|刚才那首|前一首|回到刚才)")
_ROUTE_PREF = re.compile(r"(不要|不走|别走|避开|绕开|躲开)(高速|收费站|拥堵|收费)")
_UP_WORDS = ("高", "升", "暖", "热")
HALF_STEP = 0.5
_COLDER_FEELS = ("热", "闷")


@dataclass(frozen=True)
class Rewrite:
    text: str
    applied: bool
    reason: str = ""


def rewrite(text: str, *, current_intent: str | None, memory: dict[str, Any], max_chars: int = 16) -> Rewrite:
    """Turn a short follow-up into a full command using the session's last intent and context memory."""
    stripped = text.strip()
    if not current_intent or len(stripped) > max_chars:
        return Rewrite(text, False)
    for family, rule in ((AC_FAMILY, _rewrite_ac), (MUSIC_FAMILY, _rewrite_music), (NAV_FAMILY, _rewrite_nav)):
        if current_intent in family:
            result = rule(stripped, memory)
            if result:
                return result
    return Rewrite(text, False)


def _rewrite_ac(text: str, memory: dict[str, Any]) -> Rewrite | None:
    last = memory.get("last_temperature")
    if last is None:
        return None
    step = _AC_STEP.match(text)
    if step:
        up = any(w in step.group("dir") for w in _UP_WORDS)
        amount = step.group("n")
        delta = HALF_STEP if amount == "半" else (parse_chinese_number(amount) if amount else 1)
        if delta is None:
            return None
    else:
        feel = _AC_FEEL.match(text)
        if not feel:
            return None
        # "too cold" means warmer air; "too hot/stuffy" means cooler
        up = feel.group("feel") not in _COLDER_FEELS
        delta = 1
    target = float(last) + (delta if up else -delta)
    shown = int(target) if float(target).is_integer() else target
    return Rewrite(f"把空调调到{shown}度", True, f"ac_{'up' if up else 'down'}_from_{last}")


def _rewrite_music(text: str, memory: dict[str, Any]) -> Rewrite | None:
    if _PREV.search(text):
        return Rewrite("播放上一首歌", True, "music_previous")
    if _NEXT.search(text):
        return Rewrite("播放下一首歌", True, "music_next")
    return None


def _rewrite_nav(text: str, memory: dict[str, Any]) -> Rewrite | None:
    destination = memory.get("last_destination")
    pref = _ROUTE_PREF.search(text)
    if not destination or not pref:
        return None
    return Rewrite(f"导航去{destination}，{pref.group(0)}", True, "navigation_route_preference")
