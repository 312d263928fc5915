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
        found = self.first(pattern, accept)
        if found is None:
            return None
        self.mask(found[0])
        return found[1]

    def first(
        self, pattern: re.Pattern[str], accept: Callable[[re.Match[str]], _T | None]
    ) -> tuple[tuple[int, int], _T] | None:
        """The span and result of the first match `accept` takes, nothing recorded."""
        for match in pattern.finditer(self.masked):
            result = accept(match)
            if result is not None:
                return match.span(), result
        return None

    def mask(self, span: tuple[int, int]) -> None:
        """Record `span` as a found piece and mask it."""
        start, end = span
        self.spans.append((start, end))
        self.masked = self.masked[:start] + self._MASK * (end - start) + self.masked[end:]

    def matched_text(self) -> str:
        return self.text[min(s for s, _ in self.spans) : max(e for _, e in self.spans)]
