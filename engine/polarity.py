"""Which side of an opposite pair a turn asks for: the pack's `rules.opposites`, `rules.ceasing` and `rules.sides`.

An encoder reads 镜子贴着车门，请把它们展开 and 把镜子收起来 close together, and 天窗别开着了 close to opening the
sunroof: the device dominates, the direction is a word or two. Two lexical rules read the direction instead:
- ceasing (天窗别开着了, 座椅加热歇会儿, 声音别那么大): the words name the "on" side and ask for the "off" one. Only an
  "on" intent is turned, to its "off" opposite; ceasing never asks for the "on" side.
- sides (展开 / 收起, 往大 / 往小, 锁上 / 解锁): the last words in the text naming a side of the top intent's pair
  decide between the pair. Words taken back by a negation (别调大, 不是锁上) or said as a state (折起来的镜子) count
  for nothing.
Either keeps the score and decision and changes only which of the pair is meant. The planner's clause analysis asks
the same of each clause (`other`), so 空调没必要开 in a longer turn is no request to turn it on.
"""

from __future__ import annotations

import re

from engine.fusion import FusionResult
from engine.pack import Rules
from protocol.turn_debug import Candidate


class Polarity:
    def __init__(self, rules: Rules) -> None:
        self._ceasing = re.compile("|".join(f"(?:{p})" for p in rules.ceasing)) if rules.ceasing else None
        self._opposites = dict(rules.opposites)
        self._either = {**self._opposites, **{off: on for on, off in self._opposites.items()}}
        sides = rules.sides
        self._words = {intent: [re.compile(p) for p in patterns] for intent, patterns in sides.words.items()}
        self._negated = re.compile(f"(?:{'|'.join(map(re.escape, sides.negations))})$") if sides.negations else None
        self._state = re.compile(sides.state)

    def turned(self, text: str, intent: str) -> str | None:
        """The "off" opposite of `intent` when it is an "on" intent and `text` says ceasing; else None."""
        if self._ceasing is None or intent not in self._opposites or not self._ceasing.search(text):
            return None
        return self._opposites[intent]

    def side(self, text: str, intent: str) -> str | None:
        """The opposite of `intent` when the last words in `text` naming a side of their pair name the other side."""
        other = self._either.get(intent)
        if other is None:
            return None
        said = [
            (m.end(), who)
            for who in (intent, other)
            for pattern in self._words.get(who, ())
            for m in pattern.finditer(text)
            if self._counts(text, m)
        ]
        return other if said and max(said)[1] == other else None

    def other(self, text: str, intent: str) -> str | None:
        """The side `text` asks for instead of `intent`, ceasing first; None when it asks for `intent` itself."""
        found = self._other(text, intent)
        return found[0] if found else None

    def one_side(self, candidates: list[Candidate]) -> list[Candidate]:
        """`candidates` less any whose opposite ranks before it: 锁门 and 解锁 are never two requests of one turn."""
        kept: list[Candidate] = []
        for c in candidates:
            if all(self._either.get(c.intent) != k.intent for k in kept):
                kept.append(c)
        return kept

    def read(self, text: str, fusion: FusionResult) -> FusionResult:
        """`fusion` with its top changed to the side `text` asks for (`other`); else `fusion` itself."""
        top = fusion.top
        if top is None:
            return fusion
        found = self._other(text, top.intent)
        if found is None:
            return fusion
        off, why = found
        ranked = [Candidate(intent=off, score=top.score), *(c for c in fusion.ranked[1:] if c.intent != off)]
        return FusionResult(
            decision=fusion.decision, reason=f"{fusion.reason}; {why}: {top.intent} → {off}", ranked=ranked
        )

    def _other(self, text: str, intent: str) -> tuple[str, str] | None:
        """(the side asked for instead of `intent`, why), ceasing first."""
        if off := self.turned(text, intent):
            return off, "said as ceasing"
        if off := self.side(text, intent):
            return off, "the words name the other side"
        return None

    def _counts(self, text: str, m: re.Match[str]) -> bool:
        negated = self._negated is not None and self._negated.search(text, 0, m.start())
        return not negated and not self._state.match(text, m.end())
