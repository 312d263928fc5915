"""Builders of sub-agent inputs for the agent tests: a fixed `now`, candidate items, feedback facts, checks."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from protocol.agents import AgentResponseEnvelope, AgentTimeRange, CandidateItem, FeedbackFact, SubAgentInputBase
from protocol.rest import WriteRequestCreate

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=TZ)  # a Tuesday
USER = UUID("00000000-0000-4000-8000-000000000001")


def at(month: int, day: int, hour: int = 0, minute: int = 0, year: int = 2026) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=TZ)


def item_id(title: str) -> UUID:
    return uuid5(NAMESPACE_URL, f"item:{title}")


def item(
    title: str,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    due: datetime | None = None,
    item_type: str | None = None,
    status: str = "planned",
    version: int = 1,
) -> CandidateItem:
    return CandidateItem(
        id=item_id(title),
        title=title,
        item_type=item_type or ("todo" if due else "schedule"),
        start_at=start,
        end_at=end,
        due_at=due,
        status=status,
        version=version,
    )


def fact(of: CandidateItem, status: str, *, minutes: int | None = None, when: datetime = NOW) -> FeedbackFact:
    return FeedbackFact(
        id=uuid5(NAMESPACE_URL, f"feedback:{of.title}:{status}:{when.isoformat()}"),
        task_item_id=of.id,
        feedback_status=status,
        normalized_feedback=f"「{of.title}」{status}",
        duration_minutes=minutes,
        occurred_at=when,
    )


def make_input(
    raw: str,
    start: datetime,
    end: datetime,
    *,
    params: dict[str, Any] | None = None,
    items: list[CandidateItem] = (),
    feedbacks: list[FeedbackFact] = (),
    now: datetime = NOW,
) -> SubAgentInputBase:
    return SubAgentInputBase(
        user_id=USER,
        raw_input=raw,
        recent_messages=[],
        parsed_params=params or {},
        time_range=AgentTimeRange(start_at=start, end_at=end, source="user_explicit"),
        candidate_items=list(items),
        feedbacks=list(feedbacks),
        now=now,
    )


def checked_action(envelope: AgentResponseEnvelope, payload_model: type[BaseModel] | None) -> dict[str, Any]:
    """The envelope's db_action after checking it is a confirmable write-request body whose payload validates."""
    assert envelope.isNeedUser and not envelope.isError
    action = envelope.db_action
    assert action is not None and "idempotency_key" not in action
    WriteRequestCreate.model_validate(action)
    if payload_model is not None:
        payload_model.model_validate(action["payload"])
    return action


class FakeWriter:
    """A TextWriter double: answers `answer` after `delay` seconds, or raises TimeoutError; records its calls."""

    def __init__(self, answer: str | None = None, *, delay: float = 0.0, raises: bool = False) -> None:
        self.answer, self.delay, self.raises = answer, delay, raises
        self.calls: list[tuple[str, dict]] = []

    async def write(self, prompt: str, *, facts: dict, timeout_s: float) -> str | None:
        self.calls.append((prompt, facts))
        if self.raises:
            raise TimeoutError
        await asyncio.sleep(self.delay)
        return self.answer
