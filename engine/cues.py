"""Request cues (pack `rules.cues`): the words that ask for one intent (安排一个…, 约一下… ask for a new item).

Routing's models read the whole sentence and can stay unsure between intents whose examples share words (安排 is in
新建 and 重新安排 and 有什么安排). When they are unsure, the cue the user said settles it among their candidates —
the same way a person hears the verb of a request — instead of asking which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.pack import Pack


class RequestCues:
    def __init__(self, pack: Pack) -> None:
        self._cues = {intent: [re.compile(p) for p in patterns] for intent, patterns in pack.rules.cues.items()}

    def said(self, text: str) -> set[str]:
        """The intents whose cue occurs in `text`."""
        return {intent for intent, patterns in self._cues.items() if any(p.search(text) for p in patterns)}

    def pick(self, text: str, candidates: Iterable[str]) -> str | None:
        """The one candidate whose cue `text` says; None when no candidate's cue, or several, occur."""
        said = self.said(text)
        named = [c for c in dict.fromkeys(candidates) if c in said]
        return named[0] if len(named) == 1 else None
