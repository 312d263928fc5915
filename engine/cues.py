"""Request cues (pack `rules.cues`): the words that ask for one intent (安排一个…, 约一下… ask for a new item).

Routing's models read the whole sentence and can stay unsure between intents whose examples share words (安排 is in
新建 and 重新安排 and 有什么安排). When they are unsure, the cue the user said settles it among their candidates —
the same way a person hears the verb of a request — instead of asking which. A few cues outrank even a sure route
(`rules.cues_over`): a goal's horizon (我计划下个月底之前把论文写完) asks for a plan although the sentence reads like
a dated item to the models.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.pack import Pack

_RE_CLAUSE = re.compile(r"[，,。！!？?；;]")


def reason_clause(pack: Pack) -> re.Pattern[str] | None:
    """The pack's `rules.reasons` as one regex; None when it has none."""
    return re.compile("|".join(f"(?:{p})" for p in pack.rules.reasons)) if pack.rules.reasons else None


class RequestCues:
    def __init__(self, pack: Pack) -> None:
        self._cues = {intent: [re.compile(p) for p in patterns] for intent, patterns in pack.rules.cues.items()}
        self._over = pack.rules.cues_over
        self._reason = reason_clause(pack)

    def said(self, text: str) -> set[str]:
        """The intents whose cue occurs in `text`, less those another one said outranks (`rules.cues_over`, one way
        only: 试听课取消掉，名额已经让出去了 asks to delete, although 去了 ends it like feedback)."""
        said = self._said(text)
        return {i for i in said if not any(self._outranks(o, i) for o in said)}

    def _said(self, text: str) -> set[str]:
        """Every intent whose cue occurs in `text`; a clause that only reports (`rules.reasons`: 对方说…) counts only
        when no other clause says a cue."""
        clauses = _RE_CLAUSE.split(text)
        asking = [c for c in clauses if not (self._reason and self._reason.search(c))]
        said = self._cued("，".join(asking)) if len(asking) < len(clauses) else set()
        return said or self._cued(text)

    def _cued(self, text: str) -> set[str]:
        return {i for i, patterns in self._cues.items() if any(p.search(text) for p in patterns)}

    def _outranks(self, cue: str, other: str) -> bool:
        return cue in self._over.get(other, ()) and other not in self._over.get(cue, ())

    def pick(self, text: str, candidates: Iterable[str]) -> str | None:
        """The one candidate whose cue `text` says; None when no candidate's cue, or several, occur."""
        said = self.said(text)
        named = [c for c in dict.fromkeys(candidates) if c in said]
        return named[0] if len(named) == 1 else None

    def over(self, text: str, routed: str) -> str | None:
        """The one intent of `rules.cues_over[routed]` whose cue `text` says while it says none of `routed`'s own;
        None otherwise (the sure route stands)."""
        said = self._said(text)
        named = [i for i in self._over.get(routed, ()) if i in said]
        return named[0] if len(named) == 1 and routed not in said else None
