"""A request said as stopping its opposite (天窗别开着了, 座椅加热歇会儿, 声音别那么大): the pack's `rules.ceasing`
and `rules.opposites`.

Such words name the device and the "on" side of its action, and an encoder reads them close to the "on" request;
the user asks for the "off" one. When the words say ceasing and fusion's top candidate is an "on" intent with an
"off" opposite, the top becomes that opposite, at the same score and decision. Only that direction: ceasing never
asks for the "on" side, and an "off" top stays as it is. The planner's clause analysis asks the same of each clause
(`turned`), so 空调没必要开 in a longer turn is no request to turn it on.
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
        self._either = {**self._opposites, **{off: on for on, off in self._opposites.items()}}

    def turned(self, text: str, intent: str) -> str | None:
        """The "off" opposite of `intent` when it is an "on" intent and `text` says ceasing; else None."""
        if self._ceasing is None or intent not in self._opposites or not self._ceasing.search(text):
            return None
        return self._opposites[intent]

    def one_side(self, candidates: list[Candidate]) -> list[Candidate]:
        """`candidates` less any whose opposite ranks before it: 锁门 and 解锁 are never two requests of one turn."""
        kept: list[Candidate] = []
        for c in candidates:
            if all(self._either.get(c.intent) != k.intent for k in kept):
                kept.append(c)
        return kept

    def read(self, text: str, fusion: FusionResult) -> FusionResult:
        """`fusion` with an "on" top turned to its "off" opposite when `text` says ceasing; else `fusion` itself."""
        top = fusion.top
        off = self.turned(text, top.intent) if top is not None else None
        if off is None:
            return fusion
        ranked = [Candidate(intent=off, score=top.score), *(c for c in fusion.ranked[1:] if c.intent != off)]
        return FusionResult(decision=fusion.decision, reason=f"{fusion.reason}; said as ceasing: {top.intent} → {off}",
                            ranked=ranked)
