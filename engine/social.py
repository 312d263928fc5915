"""Social routing before task routing (seed 003 §10): greetings, thanks, goodbyes and capability questions."""

from __future__ import annotations

import re

from engine.keyword import KeywordMatcher
from engine.pack import Rules

_PUNCT = re.compile(r"[\s，。！？!?,.~、]+$")


class SocialRouter:
    def __init__(self, rules: Rules, keywords: KeywordMatcher) -> None:
        self._patterns = [(cat, re.compile(p, re.IGNORECASE)) for cat, ps in rules.social_patterns.items() for p in ps]
        self._keywords = keywords

    def route(self, text: str) -> str | None:
        """The social category of `text`, or None when it is (or looks like) a task."""
        normalized = _PUNCT.sub("", text.strip())
        if not normalized or self._keywords.hits(normalized):
            return None
        for category, pattern in self._patterns:
            if pattern.search(normalized):
                return category
        return None
