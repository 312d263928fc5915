"""Keyword matcher (seed 003 §12.3): intents whose keywords occur in the text, longest match first."""

from __future__ import annotations

import re

from engine.pack import Pack
from protocol.turn_debug import Candidate


class KeywordMatcher:
    def __init__(self, pack: Pack) -> None:
        self._keywords = [(kw.lower(), intent.id) for intent in pack.intents for kw in intent.keywords if kw]
        negations = [re.escape(n.lower()) for n in pack.rules.keyword_negations if n]
        # 不用(再)提醒我: the keyword is said only to take it back
        self._negated = re.compile(f"(?:{'|'.join(negations)})再?$") if negations else None

    def spans(self, text: str) -> dict[str, tuple[int, int]]:
        """Per intent, where its longest keyword occurs in `text`, not counting an occurrence right after a
        negation (`rules.keyword_negations`) or inside one that is (别打开空调: neither 打开空调 nor 开空调)."""
        lowered = text.lower()
        found = [(at, at + len(kw), intent_id) for kw, intent_id in self._keywords for at in _occurrences(lowered, kw)]
        if self._negated is not None:
            negated = [(a, b) for a, b, _ in found if self._negated.search(lowered, 0, a)]
            found = [(a, b, i) for a, b, i in found if not any(na <= a and b <= nb for na, nb in negated)]
        spans: dict[str, tuple[int, int]] = {}
        for a, b, intent_id in found:
            if intent_id not in spans or b - a > spans[intent_id][1] - spans[intent_id][0]:
                spans[intent_id] = (a, b)
        return spans

    def match(self, text: str) -> list[Candidate]:
        """A hit scores 1.0; when several intents hit, a shorter keyword scores by its length share of the longest."""
        best = {intent_id: end - start for intent_id, (start, end) in self.spans(text).items()}
        if not best:
            return []
        longest = max(best.values())
        ranked = sorted(best.items(), key=lambda kv: -kv[1])
        return [Candidate(intent=i, score=round(n / longest, 4)) for i, n in ranked]

    def hits(self, text: str) -> bool:
        return bool(self.spans(text))


def _occurrences(text: str, kw: str) -> list[int]:
    at, found = text.find(kw), []
    while at >= 0:
        found.append(at)
        at = text.find(kw, at + 1)
    return found
