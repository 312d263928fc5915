"""Seed 003's cloud social responder (§10.3, §28.3): chit-chat, feelings (我好焦虑) and answerable requests outside the
catalog, written by the `llm.use.social` backends that may write for users (`generates: true`), in order, inside the
turn's deadline; the template answers when none does in time with a reply that passes the checks.

Plain chat completions, no JSON (seed 003 §10.3: temperature 0.6, at most 120 tokens, short, spoken, no claimed
action, no JSON): a capable instruction model answers better in its own words than through a schema, and
`checked_reply` (engine/llm/replies.py) refuses what a user must not hear. A remote backend takes longer than a
local template, so the turn's budget grows once by the escalation's extra time (budgets.turn_ms.llm - text), as for
the LLM planner; each call gets min(its backend's timeout, the time left) and is cancelled with the turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from engine.deadline import Deadline, StageTimeout
from engine.llm.lm import (
    PRIORITY_INTERACTIVE,
    LanguageModel,
    LmFailed,
    LmRequest,
    RoutedLanguageModel,
    abort_quietly,
    complete_within,
    new_request_id,
)
from engine.llm.replies import checked_reply, claims_an_action
from engine.streaming import OnDelta
from protocol.turn_debug import ReplyDebug

logger = logging.getLogger(__name__)

STAGE = "reply"
TEMPERATURE = 0.6  # seed 003 §10.3
MAX_TOKENS = 120  # seed 003 §10.3
MAX_CHARS = 100  # longer is not a spoken reply

SOCIAL_SYSTEM = (
    "你是一个语音助手，正在和用户闲聊。用一两句简短、口语化的中文回答。\n"
    "- 不输出 JSON、列表、代码或 markdown。\n"
    "- 你在这次对话里没有执行任何操作：绝不说已经帮用户打开、设置、安排、取消或记录了什么。\n"
    "- 超出你能力的请求，礼貌说明，可以建议用户换个说法。"
)
EMOTION_SYSTEM = (
    "用户在说自己的感受。温柔地回应：先接住情绪、说明这种感受很正常，再轻轻给一个小建议；一两句话，口语化。\n"
    "- 不说教，不输出 JSON、列表或 markdown。\n"
    "- 你没有执行任何操作：绝不说已经帮用户安排、设置或记录了什么。"
)

Purpose = Literal["social", "emotion"]
Outcome = Literal["generated", "refused", "timed_out", "error", "busy"]
_CLAUSE_END = re.compile(r"[，。！？,.!?；;～~…\n]")


@dataclass(frozen=True)
class ReplyBackend:
    """One backend of `llm.use.social`: its name (for routing_debug), the model, its temperature, the most one call
    may take (None: the `reply` stage budget) and whether the turn's budget must grow for it (a remote endpoint)."""

    name: str
    lm: LanguageModel
    temperature: float = TEMPERATURE
    timeout_s: float | None = None
    remote: bool = True


class SocialResponder:
    """`engine.llm.replies.Replies` over plain chat completions of `backends`, tried in order."""

    def __init__(
        self,
        backends: Sequence[ReplyBackend],
        *,
        budget_s: float,
        extra_ms: float,
        max_tokens: int = MAX_TOKENS,
        max_chars: int = MAX_CHARS,
    ) -> None:
        """`budget_s`: a call's budget when its backend names no timeout (budgets.stages_ms.reply); `extra_ms`: what
        the turn's budget grows by, once, before a remote backend is asked."""
        self._backends, self._budget_s, self._extra_ms = list(backends), budget_s, extra_ms
        self._max_tokens, self._max_chars = max_tokens, max_chars

    async def social(
        self, text: str, deadline: Deadline, *, notes: list[ReplyDebug] | None = None, on_delta: OnDelta | None = None
    ) -> str | None:
        return await self._write("social", SOCIAL_SYSTEM, text, deadline, notes, on_delta)

    async def emotion(
        self,
        text: str,
        deadline: Deadline,
        *,
        history: str = "",
        notes: list[ReplyDebug] | None = None,
        on_delta: OnDelta | None = None,
    ) -> str | None:
        system = f"{EMOTION_SYSTEM}\n\n最近的对话：\n{history}" if history else EMOTION_SYSTEM
        return await self._write("emotion", system, text, deadline, notes, on_delta)

    async def _write(
        self,
        purpose: Purpose,
        system: str,
        text: str,
        deadline: Deadline,
        notes: list[ReplyDebug] | None,
        on_delta: OnDelta | None,
    ) -> str | None:
        said = notes if notes is not None else []
        for backend in self._backends:
            if backend.remote:
                deadline.escalate(self._extra_ms)  # once per turn; a no-op when the planner escalated already
            if deadline.work_remaining_s() <= 0:
                break
            budget_s = backend.timeout_s if backend.timeout_s is not None else self._budget_s
            request = LmRequest(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": text}],
                json_schema=None,
                max_tokens=self._max_tokens,
                temperature=backend.temperature,
                request_id=new_request_id("reply"),
                priority=PRIORITY_INTERACTIVE,
            )
            if on_delta is not None and isinstance(backend.lm, RoutedLanguageModel):
                streamed, outcome, why = await self._stream(backend.lm, request, deadline, budget_s, on_delta)
                said.append(ReplyDebug(purpose=purpose, backend=backend.name, outcome=outcome, reason=why))
                if streamed:
                    return streamed
                continue
            try:
                reply = await complete_within(backend.lm, request, deadline=deadline, stage=STAGE, budget_s=budget_s)
            except StageTimeout:
                said.append(ReplyDebug(purpose=purpose, backend=backend.name, outcome="timed_out"))
                continue
            except LmFailed as exc:
                failed: Outcome = "busy" if exc.busy else "error"
                said.append(ReplyDebug(purpose=purpose, backend=backend.name, outcome=failed, reason=exc.reason))
                continue
            except Exception as exc:  # noqa: BLE001 — a failed writer is the template's turn, never a failed turn
                logger.warning("reply from %s failed", backend.name, exc_info=True)
                said.append(
                    ReplyDebug(purpose=purpose, backend=backend.name, outcome="error", reason=type(exc).__name__)
                )
                continue
            checked = checked_reply(reply.text, max_chars=self._max_chars)
            if checked is None:
                why = "blank" if not reply.text.strip() else "too long or claims an action"
                said.append(ReplyDebug(purpose=purpose, backend=backend.name, outcome="refused", reason=why))
                continue
            said.append(ReplyDebug(purpose=purpose, backend=backend.name, outcome="generated"))
            return checked
        return None

    async def _stream(
        self, lm: RoutedLanguageModel, request: LmRequest, deadline: Deadline, budget_s: float, on_delta: OnDelta
    ) -> tuple[str, Outcome, str]:
        """The reply as it is decoded, each clause handed to `on_delta` once it passed the checks; the first clause
        that does not (a claimed action, past `max_chars`) ends it there, as does the deadline. Returns what was said
        (the reply, when not empty), the outcome and why it stopped early."""
        said, pending = "", ""
        outcome: Outcome = "generated"
        why = ""

        async def say(clause: str) -> bool:
            nonlocal said
            clause = clause if said else clause.lstrip()
            if not clause:
                return True
            if len(said) + len(clause) > self._max_chars or claims_an_action(clause):
                return False
            said += clause
            await on_delta(clause)
            return True

        deltas = lm.stream(request)
        try:
            async with deadline.phase(STAGE, budget_s):
                async for delta in deltas:
                    pending += delta.get("text") or ""
                    while (end := _CLAUSE_END.search(pending)) is not None:
                        clause, pending = pending[: end.end()], pending[end.end() :]
                        if not await say(clause):
                            return self._refused(said)
                if pending.strip() and not await say(pending.rstrip()):
                    return self._refused(said)
        except StageTimeout:
            await abort_quietly(lm, request.request_id)
            outcome, why = "timed_out", "deadline"
        except LmFailed as exc:
            outcome, why = ("busy" if exc.busy else "error"), exc.reason
        except Exception as exc:  # noqa: BLE001 — a failed writer is the template's turn, never a failed turn
            logger.warning("streamed reply failed", exc_info=True)
            outcome, why = "error", type(exc).__name__
        finally:
            await deltas.aclose()  # type: ignore[attr-defined]  # an async generator: closing it closes the call
        if said:
            return said.rstrip(), "generated", f"cut: {why}" if why else ""
        return "", outcome, why or ("blank" if outcome == "generated" else "")

    @staticmethod
    def _refused(said: str) -> tuple[str, Outcome, str]:
        why = "too long or claims an action"
        return (said.rstrip(), "generated", f"cut: {why}") if said else ("", "refused", why)
