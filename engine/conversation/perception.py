"""Perception, the main agent's first stage (seed 002): what the turn understood becomes a `PerceptionDecision`, a
`ClarificationRequest`, or a reply shown as it is. It never reads business candidates, calls an agent or writes.

The understanding itself is the turn engine's (routing, slots, its own clarification questions); this module maps
its response onto seed 002's objects, picks the turn's top-level time range, and asks a long-task split's
questions all at once, reusing answers given in the recent messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import Any, Protocol
from uuid import UUID

from config.engine import ConversationConfig
from engine.agents.schedule_words import MOVE_MARKER
from engine.slots import DEFAULT_LIMITS, SlotLimits, extract_datetime
from protocol.agents import AGENT_NAMES, AgentTimeRange, ClarificationQuestion, ClarificationRequest, PerceptionDecision
from protocol.http_chat import ChatResponse, TimeRange, TurnStatus
from protocol.store import ConversationMessageDTO

QUESTION_TYPES = {
    TurnStatus.waiting_slot: "normal",
    TurnStatus.waiting_confirmation: "confirmation",
    TurnStatus.clarify: "disambiguation",
}
QUESTION_FIELDS = {
    TurnStatus.waiting_slot: "slot",
    TurnStatus.waiting_confirmation: "confirmation",
    TurnStatus.clarify: "intent",
}
SPLIT = ("long_task_split_agent", "split")
MOVES = frozenset({"update"})  # functions whose words name the item's time and then its new one
# functions about what already happened: a review of 周二 is of the last one
PAST_FACING = frozenset({("feedback_agent", "record"), ("review_agent", "review")})
# a replan of what was left behind (周二拖下来的事) is about the last 周二 too; a replan of what is coming is not
PAST_WHEN_SAID = {("replan_agent", "replan"): re.compile(r"拖|落下|欠|耽误|错过|没做|没完成|没弄|没干|没搞")}
# a cancel names its item by its day: 明晚的瑜伽取消掉 acts on tomorrow's 瑜伽 wherever in the day it sits (its title
# picks it among the day's items; two of one name that day are offered to choose); a clock said (上午九点的选题会)
# names the item's own time and stays
DAY_SCOPED = frozenset({("schedule_todo_agent", "delete")})
_RE_CLOCK_SAID = re.compile(r"[点:：]|\d时")
_RE_AHEAD = re.compile(r"明|后天|下(?![午班])|以后|之后|未来")
_RE_WEEKDAY = re.compile(r"周|星期|礼拜")


class SplitQuestions(Protocol):
    """What perception needs of the long-task split agent: its fields, their questions, and how to read them."""

    questions: dict[str, str]

    def prefill(self, raw_input: str, now: datetime) -> dict[str, Any]: ...

    def parse_answer(self, field: str, text: str, now: datetime) -> Any | None: ...


@dataclass(frozen=True)
class Clarify:
    request: ClarificationRequest
    question_type: str
    known: dict[str, Any] = field(default_factory=dict)  # answers already read (a batch), kept with the question


@dataclass(frozen=True)
class Decided:
    decision: PerceptionDecision
    then: list[PerceptionDecision] = field(default_factory=list)  # the message's further agent steps, in order


@dataclass(frozen=True)
class Shown:
    """A turn that ends with its reply: a plugin's result, a social answer, a fallback, a stop."""

    reply: str
    result: dict[str, Any] | None


Perceived = Clarify | Decided | Shown


def default_range(cfg: ConversationConfig, agent: str, function: str, now: datetime) -> AgentTimeRange:
    spec = cfg.default_ranges.get(f"{agent}.{function}", cfg.default_range)
    midnight = datetime.combine(now.date(), time(), tzinfo=now.tzinfo)
    return AgentTimeRange(
        start_at=midnight + timedelta(days=spec.from_days),
        end_at=midnight + timedelta(days=spec.to_days),
        source="system_default",
    )


class Perception:
    def __init__(
        self,
        cfg: ConversationConfig,
        split: SplitQuestions,
        split_fields: tuple[list[str], list[str]],
        limits: SlotLimits = DEFAULT_LIMITS,
    ) -> None:
        self._cfg = cfg
        self._limits = limits
        self._split = split
        self._required, self._optional = split_fields

    def perceive(
        self,
        response: ChatResponse,
        *,
        raw_input: str,
        source_message_id: UUID,
        question_id: UUID,
        recent: list[ConversationMessageDTO],
        now: datetime,
        reasked: bool = False,
    ) -> Perceived:
        """`question_id` is the id the turn's reply message has (a question asked is that message); `reasked` when
        the turn answered a question and the engine asks it again."""
        if response.status in QUESTION_TYPES:
            field_name = response.pending_slots[0] if response.pending_slots else QUESTION_FIELDS[response.status]
            request = ClarificationRequest(
                reason="invalid_answer" if reasked else "missing_required_params",
                mode="single",
                questions=[
                    ClarificationQuestion(
                        question_id=str(question_id),
                        field_name=field_name,
                        question_text=response.reply,
                        # a disambiguation offers what it asks among; answering one, or the missing time, settles it
                        options=[o.model_dump() for o in response.options],
                    )
                ],
                original_agent_name=None,
                original_function_name=response.intent,
            )
            return Clarify(request=request, question_type=QUESTION_TYPES[response.status])
        decision = response.decision
        if response.status != TurnStatus.decided or decision is None or decision.agent not in AGENT_NAMES:
            return Shown(reply=response.reply, result=response.result)
        steps = self._agent_steps(response, raw_input, source_message_id, recent, now)
        if len(steps) > 1:  # several agents in one message: each step from its own clause and slots
            return Decided(steps[0], then=steps[1:])
        agent, function = decision.agent, decision.function or ""
        params = dict(decision.params)
        if (
            reasked
        ):  # an answer completes the request it answered: 提醒我交房租 + 明天上午十点 (the title is in the first)
            raw_input = _with_request(raw_input, recent)
        time_range = self._time_range(agent, function, raw_input, decision.time_range, now)
        if (agent, function) == SPLIT:
            known = {**self.reusable_answers(recent), **self._split.prefill(raw_input, now), **params}
            missing = [f for f in self._required if known.get(f) in (None, "")]
            if missing:
                return self.split_questions(missing, known, question_id, reason="long_task_split_questions")
            params = known
        return Decided(
            PerceptionDecision(
                target_agent_name=agent,
                target_function_name=function,
                parsed_params=params,
                time_range=time_range,
                raw_input=raw_input,
                source_message_id=source_message_id,
                recent_messages=recent,
            )
        )

    def _agent_steps(
        self,
        response: ChatResponse,
        raw_input: str,
        source_message_id: UUID,
        recent: list[ConversationMessageDTO],
        now: datetime,
    ) -> list[PerceptionDecision]:
        """The workflow's pending agent steps in order, each with its own clause, slots and time range."""
        workflow = response.workflow
        steps = [s for s in workflow.steps if s.agent in AGENT_NAMES and s.status == "pending"] if workflow else []
        decisions = []
        for step in steps:
            agent, function, said = step.agent or "", step.action or "", step.clause or raw_input
            when = next((v for v in step.slots.values() if isinstance(v, dict) and {"start", "end"} <= v.keys()), None)
            decisions.append(
                PerceptionDecision(
                    target_agent_name=agent,
                    target_function_name=function,
                    parsed_params=dict(step.slots),
                    time_range=self._time_range(agent, function, said, TimeRange(**when) if when else None, now),
                    raw_input=said,
                    source_message_id=source_message_id,
                    recent_messages=recent,
                )
            )
        return decisions

    def _time_range(
        self, agent: str, function: str, raw_input: str, said: TimeRange | None, now: datetime
    ) -> AgentTimeRange:
        """The range the request acts on: the time it names — for a move, the time before the move marker (明天的会
        改到后天: the item is tomorrow's) — else the function's default."""
        text = raw_input
        if function in MOVES:
            head = MOVE_MARKER.split(raw_input, maxsplit=1)
            if len(head) == 2:
                text, said = head[0], None
        if said is None:
            found = extract_datetime(text, now=now, tz=now.tzinfo, limits=self._limits)
            said = TimeRange(**found.to_dict()) if found else None
        if said is None:
            return default_range(self._cfg, agent, function, now)
        start, end = datetime.fromisoformat(said.start), datetime.fromisoformat(said.end)
        past_said = PAST_WHEN_SAID.get((agent, function))
        past = (agent, function) in PAST_FACING or (past_said is not None and past_said.search(raw_input) is not None)
        if past and start > now and not _RE_AHEAD.search(said.text):
            # what was (not) done is about the last 周一 / 早上, not the next one a bare time reads as
            back = timedelta(days=7) if _RE_WEEKDAY.search(said.text) else timedelta(days=1)
            start, end = (start - back, end - back) if start - back <= now else (start, end)
        if (agent, function) in DAY_SCOPED and not _RE_CLOCK_SAID.search(said.text):
            start = datetime.combine(start.date(), time(), tzinfo=start.tzinfo)
            last = (end - timedelta(microseconds=1)).date()
            end = datetime.combine(last + timedelta(days=1), time(), tzinfo=start.tzinfo)
        return AgentTimeRange(start_at=start, end_at=end, source="user_explicit")

    def split_questions(self, missing: list[str], known: dict[str, Any], question_id: UUID, *, reason: str) -> Clarify:
        questions = [
            ClarificationQuestion(
                question_id=f"{question_id}:{name}", field_name=name, question_text=self._split.questions[name]
            )
            for name in missing
        ]
        request = ClarificationRequest(
            reason=reason,
            mode="batch",
            questions=questions,
            original_agent_name=SPLIT[0],
            original_function_name=SPLIT[1],
        )
        return Clarify(request=request, question_type="long_task_split", known=known)

    def read_answers(
        self, missing: list[str], answers: dict[str, str], raw_content: str | None, now: datetime
    ) -> tuple[dict[str, Any], list[str]]:
        """A batch answer: each missing field from `answers[field]`, else from the whole `raw_content`.
        Returns the values read and the fields still missing (asked again as `invalid_answer`)."""
        read: dict[str, Any] = {}
        for name in missing:
            text = answers.get(name) or raw_content or ""
            value = self._split.parse_answer(name, text, now) if text.strip() else None
            if value is not None:
                read[name] = value
        return read, [name for name in missing if name not in read]

    def reusable_answers(self, recent: list[ConversationMessageDTO]) -> dict[str, Any]:
        """Split answers given in the recent messages (a clarification_answer keeps the values it gave)."""
        fields = set(self._required) | set(self._optional)
        found: dict[str, Any] = {}
        for message in recent:  # oldest first: a newer answer overrides an older one
            meta = message.metadata
            if meta.message_kind == "clarification_answer" and meta.target_agent_name == SPLIT[0]:
                found.update({k: v for k, v in meta.parsed_params.items() if k in fields})
        return found


def _with_request(answer: str, recent: list[ConversationMessageDTO]) -> str:
    """The user's request the latest question asked about, then `answer` (the question's reply); `answer` alone when
    the log holds no such request."""
    asked = False
    for message in reversed(recent):  # newest first: the answer, the question, then the request it came from
        kind = message.metadata.message_kind
        if kind == "clarification_question":
            asked = True
        elif asked and message.role == "user" and kind == "input":
            return f"{message.raw_content}，{answer}" if message.raw_content not in answer else answer
    return answer
