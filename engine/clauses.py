"""The one clause split of a turn, shared by the encoder call, the detector and the planner."""

from __future__ import annotations

import re

from config.engine import ClauseConfig


class ClauseSplitter:
    def __init__(self, cfg: ClauseConfig) -> None:
        self._boundary = re.compile(cfg.pattern)
        self._ordered = re.compile(cfg.ordered)
        self._leading = re.compile(cfg.leading)
        self._min_chars = cfg.min_chars

    def clauses(self, text: str) -> list[str]:
        """The text's clauses; a text with one clause (or none long enough) is its own single clause."""
        parts: list[str] = []
        for part in (p.strip() for p in self._boundary.split(text)):
            ordered = self._ordered.match(part)
            parts.extend((ordered["first"].strip(), ordered["then"].strip()) if ordered else (part,))
        parts = [p for p in parts if len(p) >= self._min_chars]
        if len(parts) > 1:  # 先开窗，再开空调: the clause is 开窗
            parts = [self._leading.sub("", p) for p in parts]
        return parts or [text]

    def extra(self, text: str) -> tuple[str, ...]:
        """The clauses worth embedding beside the whole text: none when the text is a single clause."""
        parts = self.clauses(text)
        return tuple(parts) if len(parts) > 1 else ()
