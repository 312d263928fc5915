"""A request said as stopping its opposite (天窗别开着了, 座椅加热歇会儿, 声音别那么大): the pack's `rules.ceasing`
and `rules.opposites`.

Such words name the device and the "on" side of its action, and an encoder reads them close to the "on" request;
the user asks for the "off" one. When the words say ceasing and fusion's top candidate is an "on" intent with an
"off" opposite, the top becomes that opposite, at the same score and decision. Only that direction: ceasing never
asks for the "on" side, and an "off" top stays as it is. The clause analysis of the planner is left alone.
"""
from __future__ import annotations

import re

from engine.fusion import FusionResult
from engine.pack import Rules
from protocol.http_chat import Candidate


class Polarity:
    def __init__(self, rules: Rules) -> None:
        self._ceasing = re.compile("|".join(f"(?:{p})" for p in rules.ceasing)) if rules.ceasing else None
        self._opposites = dict(rules.opposites)

    def read(self, text: str, fusion: FusionResult) -> FusionResult:
        """`fusion` with an "on" top turned to its "off" opposite when `text` says ceasing; else `fusion` itself."""
        top = fusion.top
        if self._ceasing is None or top is None or top.intent not in self._opposites or not self._ceasing.search(text):
            return fusion
        off = self._opposites[top.intent]
        ranked = [Candidate(intent=off, score=top.score), *(c for c in fusion.ranked[1:] if c.intent != off)]
        return FusionResult(decision=fusion.decision, reason=f"{fusion.reason}; said as ceasing: {top.intent} → {off}",
                            ranked=ranked)
