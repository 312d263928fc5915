"""Keyword matcher (seed 003 §12.3): intents whose keywords occur in the text, longest match first."""
from __future__ import annotations

from engine.pack import Pack
from protocol.http_chat import Candidate


class KeywordMatcher:
    def __init__(self, pack: Pack) -> None:
        self._keywords = [(kw.lower(), intent.id) for intent in pack.intents for kw in intent.keywords if kw]

    def match(self, text: str) -> list[Candidate]:
        """A hit scores 1.0; when several intents hit, a shorter keyword scores by its length share of the longest."""
        lowered = text.lower()
        best: dict[str, int] = {}
        for kw, intent_id in self._keywords:
            if kw in lowered:
                best[intent_id] = max(best.get(intent_id, 0), len(kw))
        if not best:
            return []
        longest = max(best.values())
        ranked = sorted(best.items(), key=lambda kv: -kv[1])
        return [Candidate(intent=i, score=round(n / longest, 4)) for i, n in ranked]

    def hits(self, text: str) -> bool:
        lowered = text.lower()
        return any(kw in lowered for kw, _ in self._keywords)
