"""Scope resolution (seed 002): which of the user's items, already narrowed to the turn's time range, the words name.

Only the candidates execution read from the store are considered, so a reference can never reach an item outside
the range or another user's item. The title is matched by character bigrams of what the user said, with the time
words and the command words taken out.
"""

from __future__ import annotations

import re

from engine.agents.schedule_words import MOVE_MARKER
from protocol.agents import CandidateItem, ScopeResolutionResult

# words of the command itself, never of an item's title
COMMAND_WORDS = re.compile(
    r"帮我|给我|麻烦|请|把|将|删除|删掉|删了|去掉|取消|修改|改到|改成|改一下|推到|挪到|调到|换到|延到|提前到|移到|往后推|推迟|提早|"
    r"一下|那个|这个|的|了|吧|呢|啊|日程|安排|事项|待办|提醒|完成了|做完了|已经|搞定|没完成|没做|反馈|记录|记一下"
)


# a move names the item before its marker and the new time after it: 把明天的组会改到后天


def _bigrams(text: str) -> set[str]:
    chars = [c for c in text if not c.isspace() and c not in "，。！？、,.!?"]
    return {a + b for a, b in zip(chars, chars[1:], strict=False)} | set(chars)


def reference_words(raw_input: str, time_text: str | None) -> str:
    """What is left of the request to name an item: before a move marker, without its time expression and its
    command words."""
    text = MOVE_MARKER.split(raw_input, maxsplit=1)[0]
    text = text.replace(time_text, " ") if time_text else text
    return COMMAND_WORDS.sub(" ", text)


def _score(reference: str, title: str) -> float:
    said, named = _bigrams(reference), _bigrams(title)
    if not said or not named:
        return 0.0
    # the share of the title the user said: "开会" fully names "开会", half of "开会准备"
    return len(said & named) / len(named)


def resolve(
    raw_input: str, time_text: str | None, candidates: list[CandidateItem], *, allow_range: bool
) -> ScopeResolutionResult:
    """single / range / ambiguous / not_found over `candidates`.

    A function that acts on every item of a range (query, review, replan) gets `range` whenever the words name
    none in particular; an update, delete or feedback needs exactly one, so a tie is `ambiguous`."""
    if not candidates:
        return ScopeResolutionResult(decision="not_found", question_text="这段时间里没有找到相关的安排。")
    reference = reference_words(raw_input, time_text)
    scores = {c.id: _score(reference, c.title) for c in candidates}
    best = max(scores.values())
    named = [c for c in candidates if best > 0 and scores[c.id] == best]
    if allow_range:
        return ScopeResolutionResult(decision="range", resolved_item_ids=[c.id for c in named or candidates])
    if len(named) == 1:
        return ScopeResolutionResult(decision="single", resolved_item_id=named[0].id, resolved_item_ids=[named[0].id])
    if len(candidates) == 1 and best == 0:
        # the only item in the range, and the words name nothing else: "把明天的安排删了"
        return ScopeResolutionResult(
            decision="single", resolved_item_id=candidates[0].id, resolved_item_ids=[candidates[0].id]
        )
    among = named or candidates
    return ScopeResolutionResult(
        decision="ambiguous",
        resolved_item_ids=[c.id for c in among],
        question_text=f"找到 {len(among)} 项符合的安排，你指的是哪一项？",
    )
