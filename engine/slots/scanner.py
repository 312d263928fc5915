"""Span-masking pattern scanner that pulls the pieces of a time expression out of a sentence."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


class _Scanner:
    """Finds pieces of a time expression, masking each found span so later patterns skip it."""

    _MASK = "\x00"

    def __init__(self, text: str) -> None:
        self.text = text
        self.masked = text
        self.spans: list[tuple[int, int]] = []

    def take(self, pattern: re.Pattern[str], accept: Callable[[re.Match[str]], _T | None]) -> _T | None:
        """First match for which `accept` returns a non-None result; its span is recorded and masked."""
        for match in pattern.finditer(self.masked):
            result = accept(match)
            if result is not None:
                start, end = match.span()
                self.spans.append((start, end))
                self.masked = self.masked[:start] + self._MASK * (end - start) + self.masked[end:]
                return result
        return None

    def matched_text(self) -> str:
        return self.text[min(s for s, _ in self.spans) : max(e for _, e in self.spans)]
