"""Execution, the main agent's second stage (seed 002): from an `ExecutionLayerInput` only — it never re-detects
intent or asks for parameters — read the facts the function needs, resolve which items the words name, call the
sub-agent the registry names, and hand back what the turn ends with. Writing is the caller's business: a
`Proposal` becomes a write request behind the confirmation gate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from engine.conversation.scope import resolve
from engine.scheduling import AllBusyTimes, BusyTimes, CalendarBusyTimes, ItemBusyTimes, window
from protocol.agents import (
    AgentFunctionDefinition,
    AgentResponseEnvelope,
    BusySpan,
    CalendarFact,
    CandidateItem,
    ExecutionLayerInput,
    FeedbackFact,
    SubAgentInputBase,
)

# functions that act on every item of their range; the others need exactly one item
RANGE_FUNCTIONS = frozenset({("schedule_todo_agent", "query"), ("replan_agent", "replan"), ("review_agent", "review")})
# functions whose agent reads the feedback in the range, or the user's profile
NEEDS_FEEDBACK = frozenset({("replan_agent", "replan"), ("review_agent", "review")})
# functions whose agent reads the user's calendar entries: a query lists the range's, a replan avoids busy calendar
# time from the range's start to `CALENDAR_AHEAD` past the later of its end and now (where moved items may land)
NEEDS_CALENDAR = frozenset({("schedule_todo_agent", "query"), ("replan_agent", "replan")})
CALENDAR_AHEAD = timedelta(days=60)
NEEDS_PROFILE = frozenset(
    {("replan_agent", "replan"), ("long_task_split_agent", "split"), ("scheduling_agent", "plan")}
)
# functions whose agent plans into the user's free time: it gets the busy times of the request's window
NEEDS_BUSY = frozenset({("scheduling_agent", "plan")})


class Facts(Protocol):
    """The store reads execution makes, all scoped to one user."""

    async def items(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[CandidateItem]: ...

    async def feedbacks(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[FeedbackFact]: ...

    async def profile(self, user_id: UUID) -> dict[str, Any]: ...

    async def calendar(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[CalendarFact]: ...


class Agents(Protocol):
    def definition(self, agent: str, function: str) -> AgentFunctionDefinition: ...

    async def dispatch(self, agent: str, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope: ...


@dataclass(frozen=True)
class Proposal:
    """The agent proposes a write: `db_action` is a write-request body awaiting the user's confirmation."""

    response: AgentResponseEnvelope
    db_action: dict[str, Any]


@dataclass(frozen=True)
class NeedsSelection:
    candidates: list[CandidateItem]
    question_text: str


@dataclass(frozen=True)
class Shown:
    reply: str
    result: Any
    status: str  # completed | not_found


@dataclass(frozen=True)
class AgentFailed:
    message: str


Outcome = Proposal | NeedsSelection | Shown | AgentFailed
Processing = Callable[[str], Awaitable[None]]  # told each stage as it starts: resolving_scope, calling_agent


async def _nothing(stage: str) -> None:
    return None


class Execution:
    def __init__(self, agents: Agents, facts: Facts, busy_times: BusyTimes | None = None) -> None:
        """`busy_times`: when the user is busy (default: their items and their calendars' busy events, read through
        `facts`)."""
        self._agents = agents
        self._facts = facts
        self._busy_times = busy_times or AllBusyTimes(ItemBusyTimes(facts), CalendarBusyTimes(facts))

    async def run(
        self,
        inp: ExecutionLayerInput,
        user_id: UUID,
        now: datetime,
        *,
        selected: list[UUID] | None = None,
        processing: Processing = _nothing,
    ) -> Outcome:
        """`selected`: the item ids the user chose in a `selection.required` (they were offered, so in range)."""
        agent, function = inp.target_agent_name, inp.target_function_name
        definition = self._agents.definition(agent, function)
        key = (agent, function)
        candidates: list[CandidateItem] = []
        if definition.needs_candidates:
            await processing("resolving_scope")
            items = await self._facts.items(user_id, inp.time_range.start_at, inp.time_range.end_at)
            if selected is not None:
                candidates = [i for i in items if i.id in set(selected)]
                if not candidates:
                    return Shown(reply="你选的安排已经不在了，没有做任何修改。", result=None, status="not_found")
            else:
                when = inp.parsed_params.get("when")
                scope = resolve(
                    inp.raw_input,
                    when.get("text") if isinstance(when, dict) else None,
                    items,
                    allow_range=key in RANGE_FUNCTIONS,
                )
                chosen = [i for i in items if i.id in set(scope.resolved_item_ids)]
                if scope.decision == "not_found" and key not in RANGE_FUNCTIONS:
                    return Shown(reply=scope.question_text or "没有找到相关的安排。", result=None, status="not_found")
                if scope.decision == "ambiguous":
                    return NeedsSelection(candidates=chosen, question_text=scope.question_text or "你指的是哪一项？")
                candidates = chosen
        feedbacks = (
            await self._facts.feedbacks(user_id, inp.time_range.start_at, inp.time_range.end_at)
            if key in NEEDS_FEEDBACK
            else []
        )
        profile = await self._facts.profile(user_id) if key in NEEDS_PROFILE else {}
        calendar: list[CalendarFact] = []
        if key in NEEDS_CALENDAR:
            end = inp.time_range.end_at
            if key == ("replan_agent", "replan"):
                end = max(end, now) + CALENDAR_AHEAD
            calendar = await self._facts.calendar(user_id, inp.time_range.start_at, end)
        busy: list[BusySpan] = []
        if key in NEEDS_BUSY:
            span = window(inp.raw_input, now=now, profile=profile)
            found = await self._busy_times.busy(user_id, span.start, span.end)
            busy = [BusySpan(start_at=b.start, end_at=b.end) for b in found]
        await processing("calling_agent")
        response = await self._agents.dispatch(
            agent,
            function,
            SubAgentInputBase(
                user_id=user_id,
                raw_input=inp.raw_input,
                time_range=inp.time_range,
                recent_messages=inp.recent_messages,
                parsed_params=inp.parsed_params,
                candidate_items=candidates,
                feedbacks=feedbacks,
                user_profile=profile,
                calendar_entries=calendar,
                busy_times=busy,
                now=now,
            ),
        )
        if response.isError:
            return AgentFailed(response.error_message or "The agent could not act on this request.")
        if response.db_action is not None:
            return Proposal(response=response, db_action=response.db_action)
        result = response.result
        reply = result.get("reply") if isinstance(result, dict) else result if isinstance(result, str) else None
        return Shown(reply=reply or "好的。", result=result, status="completed")
