"""The main agent's execution reads the user's calendar entries of a range (for a query), from the real store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from config.settings import load_settings
from engine.calendars.model import CalendarEvent
from engine.deadline import Deadline
from serve_app.agents.context import StoreFacts
from store.calendars import entries, sources
from tests.store.calendars.support import new_user
from tests.support.packs import CONFIG_DIR

pytestmark = pytest.mark.store


async def test_execution_reads_the_calendar_entries_of_a_range(db):
    user_id = await new_user(db)
    start, end = datetime(2026, 12, 8, 1, tzinfo=UTC), datetime(2026, 12, 8, 2, tzinfo=UTC)
    event = CalendarEvent(
        uid="x", recurrence_id="", kind="event", title="组会", start_at=start, end_at=end, due_at=None
    )
    async with db.connection() as conn:
        source = await sources.create(conn, user_id, kind="upload", name="工作")
        await entries.replace(conn, user_id, source.id, [event])
    facts = StoreFacts(db, load_settings(CONFIG_DIR, {}).budgets, Deadline(budget_ms=5000))
    (fact,) = await facts.calendar(user_id, datetime(2026, 12, 8, tzinfo=UTC), datetime(2026, 12, 9, tzinfo=UTC))
    assert (fact.title, fact.kind, fact.start_at, fact.source_name) == ("组会", "event", start, "工作")
    assert await facts.calendar(user_id, datetime(2026, 12, 9, tzinfo=UTC), datetime(2026, 12, 10, tzinfo=UTC)) == []
