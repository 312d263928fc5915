"""Stop and confirmation word rules (seed 003 §9, §21): does this utterance stop the task, or confirm/deny it."""

from __future__ import annotations

import re

from engine.pack import Rules

_STRIP = re.compile(r"[\s，。！？!?,.~、吧啊呀哦了]+")


class DialogRules:
    def __init__(self, rules: Rules) -> None:
        self._rules = rules

    def is_stop(self, text: str) -> bool:
        norm = _STRIP.sub("", text)
        # a stop phrase must be (almost) the whole utterance: 暂停一下这首歌 is a music command, not a stop
        stops = (_STRIP.sub("", w) for w in self._rules.stop_words)
        return any(w and w in norm and len(norm) <= len(w) + 2 for w in stops)

    def confirmation(self, text: str) -> bool | None:
        """True for yes, False for no, None when the reply is neither (ask again)."""
        if any(w in text for w in self._rules.confirm_no):
            return False
        norm = _STRIP.sub("", text)
        if any(w in norm for w in self._rules.confirm_yes) and len(norm) <= 8:
            return True
        return None
