"""Generated replies (seed 003 §10.3's social responder, seed 000's EmotionSupport and SummaryWriter), used only when
they come in time and pass the checks; otherwise the templates filled with facts answer, as without an LLM.

The checks are what a user must be able to trust: a generated reply never claims an action that did not run
(`claims_an_action`), stays short enough to be spoken, and a summary never states a number the facts do not hold.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Protocol

from engine.deadline import Deadline
from engine.llm.lm import PRIORITY_BACKGROUND, PRIORITY_INTERACTIVE
from engine.llm.programs import InteractionContext, Program
from engine.streaming import OnDelta

if TYPE_CHECKING:
    import dspy

    from protocol.turn_debug import ReplyDebug

# "已经帮您打开了", "给你设置好了", "删除了": an action reported as done. An offer or a question ("我可以帮您打开",
# "要不要我帮你安排一下？") reports nothing.
_DONE_VERBS = (
    "打开|开启|关闭|关上|关掉|调到|调高|调低|调成|设置|设定|取消|导航|播放|暂停|"
    "锁上|锁好|解锁|创建|删除|安排|添加|修改|提醒|记录|记下|记好|预订|预约|发送"
)
_ACTION_CLAIM = re.compile(
    rf"(?:已经|已|帮你|帮您|给你|给您|为你|为您)[^，。！？,.!?]{{0,8}}?(?:{_DONE_VERBS})"
    rf"|(?:{_DONE_VERBS})(?:好|完|成功)?了"
)
_OFFER = re.compile(r"可以|能|会|要不要|需要|想|要我|是否")
_CLAUSE = re.compile(r"[^，。！？,.!?；;]+[，。！？,.!?；;]?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def claims_an_action(text: str) -> bool:
    """Whether `text` reports an action as done (to be refused when no action ran in the turn)."""
    for clause in _CLAUSE.findall(text):
        found = _ACTION_CLAIM.search(clause)
        if found is None or clause.rstrip().endswith(("？", "?", "吗")) or _OFFER.search(clause[: found.start()]):
            continue
        return True
    return False


def checked_reply(text: str, *, max_chars: int, actions_ran: bool = False) -> str | None:
    """`text` stripped when it may be said, else None: not blank, at most `max_chars`, and no claimed action unless
    one ran."""
    text = (text or "").strip()
    if not text or len(text) > max_chars:
        return None
    if not actions_ran and claims_an_action(text):
        return None
    return text


def numbers_from(facts: Any) -> set[str]:
    return set(_NUMBER.findall(json.dumps(facts, ensure_ascii=False, default=str)))


class Replies(Protocol):
    """What writes the turn's generated replies; None means "use the template". `notes`, when given, collects what
    each backend asked did (routing_debug.replies); `on_delta`, when given, hears each checked clause as it comes (a
    writer that cannot stream ignores it), and the reply returned then starts with what it heard."""

    async def social(
        self, text: str, deadline: Deadline, *, notes: list[ReplyDebug] | None = None, on_delta: OnDelta | None = None
    ) -> str | None: ...

    async def emotion(
        self,
        text: str,
        deadline: Deadline,
        *,
        history: str = "",
        notes: list[ReplyDebug] | None = None,
        on_delta: OnDelta | None = None,
    ) -> str | None: ...


class ReplyWriter:
    """Seed 003's social responder and seed 000's EmotionSupport over the LLM (`lm`: a dspy.LM from
    engine.llm.dspy_engine.dspy_lm), each inside `budget_s` of the turn's deadline; None means "use the template"."""

    def __init__(self, lm: dspy.LM, *, budget_s: float, max_chars: int = 60, stage: str = "reply") -> None:
        self._lm, self._budget_s, self._max_chars, self._stage = lm, budget_s, max_chars, stage
        self._social, self._emotion = Program("SocialReply"), Program("EmotionSupport")

    async def social(
        self, text: str, deadline: Deadline, *, notes: list[ReplyDebug] | None = None, on_delta: OnDelta | None = None
    ) -> str | None:
        out = await self._social.run(
            self._lm,
            deadline=deadline,
            stage=self._stage,
            budget_s=self._budget_s,
            priority=PRIORITY_INTERACTIVE,
            user_input=text,
        )
        return checked_reply(out["reply"], max_chars=self._max_chars) if out else None

    async def emotion(
        self,
        text: str,
        deadline: Deadline,
        *,
        history: str = "",
        notes: list[ReplyDebug] | None = None,
        on_delta: OnDelta | None = None,
    ) -> str | None:
        ctx = InteractionContext(user_input=text, dialog_history=history, pipeline=["EmotionSupport"])
        out = await self._emotion.run(
            self._lm,
            deadline=deadline,
            stage=self._stage,
            budget_s=self._budget_s,
            priority=PRIORITY_INTERACTIVE,
            interaction_context=ctx,
        )
        return checked_reply(out["emotion_reply"], max_chars=self._max_chars) if out else None


class LlmTextWriter:
    """The sub-agents' TextWriter (engine/agents/text.py) over seed 000's SummaryWriter: the agent's facts in, a
    summary out, at background priority; refused when it states a number the facts do not hold or claims an action."""

    def __init__(self, lm: dspy.LM, *, max_chars: int = 300, stage: str = "agent") -> None:
        self._lm, self._max_chars, self._stage = lm, max_chars, stage
        self._program = Program("SummaryWriter")

    async def write(self, prompt: str, *, facts: dict[str, Any], timeout_s: float) -> str | None:
        ctx = InteractionContext(user_input=prompt, pipeline=["Summary"])
        out = await self._program.run(
            self._lm,
            deadline=Deadline(timeout_s * 1000.0),
            stage=self._stage,
            budget_s=timeout_s,
            priority=PRIORITY_BACKGROUND,
            interaction_context=ctx,
            time_interval_data=json.dumps(facts, ensure_ascii=False, default=str),
        )
        text = checked_reply(out["summary_text"], max_chars=self._max_chars) if out else None
        if text is None or not set(_NUMBER.findall(text)) <= numbers_from(facts):
            return None
        return text
