"""Which turns are planning requests for the Scheduling chain. The pack has no intent of its own for them: a turn the
engine decided as a schedule create or a long-task split, or could not place (fallback, a clarifying question), goes
to `scheduling_agent.plan` when its words ask for a plan, a habit, an idea or a first step rather than one booking
at a said time or a long goal's stages. The engine's top intent travels along as the classifier signal."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from engine.scheduling.words import RequestWords, read
from protocol.http_chat import ChatResponse, Decision, TurnStatus

AGENT, FUNCTION = "scheduling_agent", "plan"
# decisions a planning request is read as today; the engine keeps everything else
_TAKEN_FROM = frozenset({("schedule_todo_agent", "create"), ("long_task_split_agent", "split")})
_UNPLACED = frozenset({TurnStatus.fallback, TurnStatus.clarify})
_RE_SPLIT = re.compile(r"拆|分解|分阶段|阶段|里程碑|路线")
_NUMERALS = "一两三四五六七八九十\\d"
_RE_LONG_FRAME = re.compile(rf"个月|半年|(?<![{_NUMERALS}])[{_NUMERALS}]+年|年底|年末|年内|今年|明年|学期|季度")
_RE_CLOCK = re.compile(r"\d{1,2}[:：]\d{2}|(?<![\d一二两三四五六七八九十])[\d一二两三四五六七八九十]+点|提醒")
_RE_PLAN = re.compile(r"想|打算|希望|计划|开始|先(?![前后])|帮我.{0,6}(?:安排|规划|排)|把.+(?:写|做|看|刷|跑)完")
_LONGEST_PLAN = timedelta(days=15)  # a longer frame is a long goal: its stages are the split agent's


def is_planning(text: str, words: RequestWords) -> bool:
    if _RE_SPLIT.search(text) or _RE_LONG_FRAME.search(text) or _RE_CLOCK.search(text) or not _RE_PLAN.search(text):
        return False
    return words.period is None or words.period[1] - words.period[0] <= _LONGEST_PLAN


def routed(response: ChatResponse, text: str, now: datetime) -> ChatResponse:
    """`response` with its decision handed to the Scheduling chain when `text` is a planning request; else as it is.
    A turn waiting on a slot or a confirmation keeps the engine's question. `now` is aware."""
    decision = response.decision
    taken = (
        response.status == TurnStatus.decided
        and decision is not None
        and (decision.agent, decision.function) in _TAKEN_FROM
        and not response.multi_intent
    )
    if not (taken or response.status in _UNPLACED) or not text.strip():
        return response
    if not is_planning(text, read(text, now)):
        return response
    intents = [decision.intents[0]] if decision is not None and decision.intents else []
    top = response.intent or (intents[0] if intents else None)
    score = next((c.score for c in response.detected_intents if c.intent == top), 0.0)
    params = {"classifier_intent": top, "classifier_score": score} if top else {}
    return response.model_copy(
        update={
            "status": TurnStatus.decided,
            "decision": Decision(
                intents=intents or ([top] if top else []), agent=AGENT, function=FUNCTION, params=params
            ),
        }
    )
