"""compose: a generated text only when it arrives in time; inside a served agent's bounded phase a slow writer
means the template, not a phase cancelled as overloaded (issue 35, item 4)."""

from __future__ import annotations

import asyncio
import time

import pytest

from engine.agents import AgentRegistry
from engine.agents.text import compose
from engine.deadline import Deadline, StageTimeout, phase_time_left
from tests.engine.agents.agent_inputs import FakeWriter
from tests.engine.agents.test_review import review_input


async def test_a_slow_writer_inside_a_short_phase_gives_the_template_inside_it() -> None:
    writer = FakeWriter("写得很好但太慢", delay=8.0)
    deadline = Deadline(budget_ms=30_000)
    started = time.monotonic()
    async with deadline.phase("agent", 0.25):
        text = await compose(writer, "p", facts={}, template="模板", timeout_s=8.0)
    assert text == "模板" and writer.calls
    assert time.monotonic() - started < 0.25


async def test_a_writer_that_answers_inside_the_phase_is_used() -> None:
    writer = FakeWriter("生成的文字", delay=0.01)
    async with Deadline(budget_ms=30_000).phase("agent", 2.0):
        assert await compose(writer, "p", facts={}, template="模板", timeout_s=8.0) == "生成的文字"


async def test_outside_a_phase_only_the_writers_own_timeout_applies() -> None:
    assert phase_time_left() is None
    writer = FakeWriter("慢一点也行", delay=0.3)
    assert await compose(writer, "p", facts={}, template="模板", timeout_s=2.0) == "慢一点也行"


async def test_phases_nest_and_the_inner_ones_end_is_read() -> None:
    deadline = Deadline(budget_ms=30_000)
    async with deadline.phase("agent", 5.0):
        async with deadline.phase("facts", 0.5):
            inner = phase_time_left()
        outer = phase_time_left()
    assert inner is not None and outer is not None and inner <= 0.5 < outer <= 5.0
    assert phase_time_left() is None


async def test_a_review_with_a_slow_writer_answers_its_template_inside_a_250_ms_agent_phase() -> None:
    """The served agents run inside `deadline.phase("agent", …)`; the review's writer waits up to 8 s by default."""
    template = (await AgentRegistry.default().dispatch("review_agent", "review", review_input())).result["reply"]
    agents = AgentRegistry.default(FakeWriter("太慢的总结", delay=8.0))
    async with Deadline(budget_ms=30_000).phase("agent", 0.25):
        envelope = await agents.dispatch("review_agent", "review", review_input())
    assert envelope.result["reply"] == template


async def test_the_phase_still_cancels_what_has_no_fallback() -> None:
    with pytest.raises(StageTimeout):
        async with Deadline(budget_ms=30_000).phase("agent", 0.05):
            await asyncio.sleep(1)
