"""Context compaction (seed 004's ContextCompactor): keep the recent tail of a conversation verbatim and fold
what came before it into one summary message once the whole no longer fits a character budget.

Length is counted as the seed does: the characters of every message's content. The layout after compaction is
[pinned system message] + [system "此前对话摘要：…"] + tail. The tail and the pinned message are never dropped or
shortened; the summary comes from an injected async summarizer (the LLM) when it answers in time, else from the
conversation itself (the first sentence of each user message), so it never says what nobody said.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from config.llm import CompactionConfig
from engine.llm.lm import PRIORITY_BACKGROUND, LanguageModel, LmRequest, new_request_id

logger = logging.getLogger(__name__)

SUMMARY_PREFIX = "此前对话摘要："
EXTRACTIVE_LEAD = "用户说过："
_JOIN = "；"
_ELLIPSIS = "…"
_MIN_SUMMARY = 8  # fewer characters than this say nothing useful: drop the middle instead
# a sentence ends at Chinese or Western end punctuation or a line break; the terminator itself is dropped
_SENTENCE_END = re.compile(r"[。！？!?；;\n]")

Message = dict[str, Any]
# summarizer(middle messages, max_chars) -> summary text; may raise, is cut off after summarizer_timeout_s
Summarizer = Callable[[list[Message], int], Awaitable[str]]
CompactionSource = Literal["none", "summarizer", "extractive", "dropped"]


@dataclass(frozen=True)
class Compacted:
    """The messages to send and how they came about. `source`: "none" (fit as they were, or nothing to fold),
    "summarizer", "extractive", or "dropped" (the budget left no room for any summary); `over_budget`: the
    result still exceeds the budget because the pinned message and the tail alone do."""

    messages: list[Message]
    source: CompactionSource
    chars: int
    over_budget: bool = False


def length(messages: Sequence[Message]) -> int:
    """Characters of content over all messages (non-text content counts as zero)."""
    return sum(len(m["content"]) for m in messages if isinstance(m.get("content"), str))


class ContextCompactor:
    def __init__(self, config: CompactionConfig | None = None, summarizer: Summarizer | None = None):
        self.config = config or CompactionConfig()
        self.summarizer = summarizer

    async def compact(self, messages: Sequence[Message], *, max_chars: int | None = None) -> Compacted:
        """Fit `messages` into `max_chars` (default: the config's budget). Within budget they come back as they
        are; otherwise everything between the pinned system message and the last `keep_recent` messages becomes
        one system message "此前对话摘要：…", sized to what the budget leaves (at most summary_max_chars).
        The input list and its dicts are not modified."""
        budget = self.config.max_chars if max_chars is None else max_chars
        messages = list(messages)
        total = length(messages)
        if total <= budget:
            return Compacted(messages, "none", total)
        pinned, rest = self._split_pinned(messages)
        keep = min(self.config.keep_recent, len(rest))
        middle, tail = rest[: len(rest) - keep], rest[len(rest) - keep :]
        if not middle:
            return Compacted(messages, "none", total, over_budget=True)
        room = min(self.config.summary_max_chars, budget - length(pinned) - length(tail)) - len(SUMMARY_PREFIX)
        source: CompactionSource
        summary, source = (await self._summarize(middle, room)) if room >= _MIN_SUMMARY else ("", "dropped")
        if not summary:
            source = "dropped"
        head = pinned + ([{"role": "system", "content": SUMMARY_PREFIX + summary}] if summary else [])
        result = head + tail
        chars = length(result)
        return Compacted(result, source, chars, over_budget=chars > budget)

    def _split_pinned(self, messages: list[Message]) -> tuple[list[Message], list[Message]]:
        if self.config.pin_system and messages and messages[0].get("role") == "system" and not _is_summary(messages[0]):
            return messages[:1], messages[1:]
        return [], messages

    async def _summarize(self, middle: list[Message], room: int) -> tuple[str, Literal["summarizer", "extractive"]]:
        if self.summarizer is not None:
            try:
                text = await asyncio.wait_for(self.summarizer(middle, room), self.config.summarizer_timeout_s)
            except TimeoutError:
                logger.warning(
                    "summarizer timed out after %.1fs; using the extractive summary", self.config.summarizer_timeout_s
                )
            except Exception:  # any failure of the model call: the turn must still get a context that fits
                logger.warning("summarizer failed; using the extractive summary", exc_info=True)
            else:
                text = text.strip() if isinstance(text, str) else ""
                if text:
                    return _fit(_strip_prefix(text), room), "summarizer"
                logger.warning("summarizer returned nothing; using the extractive summary")
        return extractive_summary(middle, room), "extractive"


def extractive_summary(messages: Sequence[Message], max_chars: int) -> str:
    """'用户说过：A；B；C': the first sentence of each user message (and the text of an earlier summary), in order,
    within `max_chars`. When not all fit, the most recent are kept, the oldest kept one cut with '…': what was
    said last matters most to the turn that follows. '' when nothing fits or there is nothing to quote."""
    items: list[str] = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, str):
            continue
        if _is_summary(m):  # an earlier compaction's summary: its items carry over, oldest first
            text = _strip_prefix(content).strip()
            text = text[len(EXTRACTIVE_LEAD) :] if text.startswith(EXTRACTIVE_LEAD) else text
            items.extend(part.strip() for part in text.split(_JOIN))
        elif m.get("role") == "user":
            items.append(_first_sentence(content))
    items = [item for item in items if item]
    room = max_chars - len(EXTRACTIVE_LEAD)
    kept: list[str] = []
    used = 0
    for item in reversed(items):
        cost = len(item) + (len(_JOIN) if kept else 0)
        if used + cost <= room:
            kept.append(item)
            used += cost
            continue
        # the first item that does not fit: keep its beginning when a useful part of it fits, then stop
        left = room - used - (len(_JOIN) if kept else 0) - len(_ELLIPSIS)
        if left >= 4:
            kept.append(item[:left] + _ELLIPSIS)
        break
    if not kept:
        return ""
    return EXTRACTIVE_LEAD + _JOIN.join(reversed(kept))


def _first_sentence(text: str) -> str:
    text = text.strip()
    match = _SENTENCE_END.search(text)
    return (text[: match.start()] if match else text).strip()


def _is_summary(message: Message) -> bool:
    content = message.get("content")
    return message.get("role") == "system" and isinstance(content, str) and content.startswith(SUMMARY_PREFIX)


def _strip_prefix(text: str) -> str:
    return text[len(SUMMARY_PREFIX) :] if text.startswith(SUMMARY_PREFIX) else text


def _fit(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(room - len(_ELLIPSIS), 0)] + _ELLIPSIS


SUMMARISE_SYSTEM = (
    "把下面这段对话压缩成一段不超过 {room} 个字的中文摘要：只写对话里说过的事实、用户的请求和偏好，"
    "不加评论，不编造，不输出 JSON 或 markdown。"
)


def lm_summarizer(lm: LanguageModel, *, max_tokens: int) -> Summarizer:
    """A `Summarizer` over a language model (an `llm.use.summariser` backend): a plain completion of the middle's
    transcript. The compactor bounds it (summarizer_timeout_s, and the planner's share of its budget); cancelled, the
    call is cancelled with it (an OpenAI-compatible endpoint's connection closed, a Serve call cancelled)."""

    async def summarise(middle: list[Message], room: int) -> str:
        transcript = "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in middle)
        reply = await lm.complete(
            LmRequest(
                messages=[
                    {"role": "system", "content": SUMMARISE_SYSTEM.format(room=room)},
                    {"role": "user", "content": transcript},
                ],
                json_schema=None,
                max_tokens=max_tokens,
                temperature=0.0,
                request_id=new_request_id("summary"),
                priority=PRIORITY_BACKGROUND,
            )
        )
        return reply.text

    return summarise
