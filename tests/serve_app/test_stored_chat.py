"""The commit's place in the budget: it starts only inside it, and a commit once sent is never cut off."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from engine.errors import Overloaded
from protocol.http_chat import ChatRequest
from serve_app import stored_chat
from serve_app.stored_chat import StoredChat
from store import conversation, users
from tests.engine.fakes import Rig, with_budgets

TURN_MS = 600.0


@pytest.fixture
def rig():
    return Rig(settings=with_budgets(turn_ms=TURN_MS))


async def _user(db):
    async with db.connection() as conn:
        return await users.shadow(conn, f"commit-{uuid.uuid4().hex[:8]}")


async def _stored(db, user_id, cmid):
    async with db.connection() as conn:
        return await conversation.stored_reply(conn, user_id, cmid)


async def test_a_commit_slower_than_the_time_left_still_lands_and_is_answered(db, rig, monkeypatch):
    real = stored_chat.commit_turn

    async def slow_commit(conn, **kwargs):
        await asyncio.sleep(TURN_MS / 1000.0)  # past the whole turn budget
        await real(conn, **kwargs)

    monkeypatch.setattr(stored_chat, "commit_turn", slow_commit)
    user = await _user(db)
    deadline = rig.engine.deadline("text")
    chat = StoredChat(rig.engine, db, rig.settings)
    response = await chat.chat(ChatRequest(user_id="u", text="打开车窗", client_message_id="m1"), user.id, deadline)
    assert response.timings.total_ms > TURN_MS  # late, and it says so
    assert await _stored(db, user.id, "m1") is not None  # saved, so it was answered, not "nothing was saved"


async def test_no_time_left_for_the_commit_saves_nothing(db, rig, monkeypatch):
    user = await _user(db)
    deadline = rig.engine.deadline("text")
    chat = StoredChat(rig.engine, db, rig.settings)

    async def late_run(state, request, ctx):  # the engine used the whole budget, reserve included
        response = await real_run(state, request, ctx)
        await asyncio.sleep(max(0.0, deadline.remaining_s()) + 0.01)
        return response

    real_run = rig.engine.chat_on
    monkeypatch.setattr(rig.engine, "chat_on", late_run)
    with pytest.raises(Overloaded, match="commit"):
        await chat.chat(ChatRequest(user_id="u", text="打开车窗", client_message_id="m2"), user.id, deadline)
    assert await _stored(db, user.id, "m2") is None
