"""Execution's reads run inside the frame's deadline; a read that runs out is a retryable `overloaded`."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager
from types import SimpleNamespace

import pytest

from engine.deadline import Deadline
from engine.errors import Overloaded
from serve_app.agents.context import StoreFacts


class SlowDb:
    @asynccontextmanager
    async def connection(self):
        await asyncio.sleep(1.0)
        yield None


def budgets(stage_ms: float):
    return SimpleNamespace(stage_s=lambda stage: stage_ms / 1000)


async def test_a_read_past_its_budget_is_overloaded_not_an_internal_error():
    deadline = Deadline(budget_ms=600)
    with pytest.raises(Overloaded):
        await StoreFacts(SlowDb(), budgets(20), deadline).recent(uuid.uuid4(), 20)
    assert 15 <= deadline.stages_ms["facts"] < 500


async def test_a_frame_with_no_time_left_reads_nothing():
    deadline = Deadline(budget_ms=600, started=0.0)  # arrived long ago
    with pytest.raises(Overloaded):
        await StoreFacts(SlowDb(), budgets(50), deadline).profile(uuid.uuid4())


async def test_a_frames_own_lookup_past_its_budget_is_overloaded():
    from serve_app.agents.agent import ConversationAgent

    settings = SimpleNamespace(budgets=budgets(20), conversation=SimpleNamespace(), timezone="Asia/Shanghai")
    agent = ConversationAgent(settings=settings, turns=None, db=SlowDb(), agents=None, perception=None)
    deadline = Deadline(budget_ms=600)
    with pytest.raises(Overloaded):
        await agent.lookup(deadline, lambda conn: asyncio.sleep(0))
    assert 15 <= deadline.stages_ms["store"] < 500
