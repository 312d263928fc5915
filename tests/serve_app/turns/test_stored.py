"""The commit's place in the budget: it starts only inside it, and a commit once sent is never cut off."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from engine.errors import InvalidInput, Overloaded
from protocol.http_chat import ChatRequest
from serve_app.turns import stored as stored_chat
from serve_app.turns.stored import StoredChat
from store import conversation, users
from tests.support.fakes import FakeModelClient, Rig, with_budgets

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


async def test_a_lease_taken_as_its_phase_timed_out_is_handed_back(db, rig, monkeypatch):
    """The lease statement lands just after the lease phase gave up: the turn is shed, and its retry finds the
    session free instead of session_busy until the lease lapses."""
    real = stored_chat.sessions.acquire
    late_s = rig.settings.budgets.stage_s("lease") + stored_chat.LEASE_SLACK_S + 0.1

    async def late_acquire(*args, **kwargs):
        lease = await real(*args, **kwargs)
        await asyncio.sleep(late_s)  # taken, but the phase stops waiting meanwhile
        return lease

    user = await _user(db)
    sid = f"late-{uuid.uuid4().hex[:8]}"
    chat = StoredChat(rig.engine, db, rig.settings)
    monkeypatch.setattr(stored_chat.sessions, "acquire", late_acquire)
    with pytest.raises(Overloaded, match="lease"):
        await chat.chat(ChatRequest(user_id="u", session_id=sid, text="打开车窗"), user.id, rig.engine.deadline("text"))
    monkeypatch.setattr(stored_chat.sessions, "acquire", real)
    retried = await chat.chat(
        ChatRequest(user_id="u", session_id=sid, text="打开车窗"), user.id, rig.engine.deadline("text")
    )
    assert retried.session_id == sid


async def test_a_plugin_turn_reads_the_world_its_lease_brought_and_nothing_else(db, monkeypatch):
    async def no_read(*args, **kwargs):
        raise AssertionError("the world came with the lease: no read of its own")

    monkeypatch.setattr(stored_chat.worlds, "load", no_read)
    models = FakeModelClient().sure("打开车窗", "cabin_window_open").sure("关闭车窗", "cabin_window_close")
    rig = Rig(models=models, settings=with_budgets(turn_ms=TURN_MS))
    user = await _user(db)
    chat = StoredChat(rig.engine, db, rig.settings)
    opened = await chat.chat(ChatRequest(user_id="u", text="打开车窗"), user.id, rig.engine.deadline("text"))
    assert opened.result["data"]["window_open"] is True
    assert "store" not in opened.timings.stages and "execute" in opened.timings.stages
    closed = await chat.chat(
        ChatRequest(user_id="u", session_id=opened.session_id, text="关闭车窗"), user.id, rig.engine.deadline("text")
    )
    assert closed.result["data"]["window_open"] is False  # the saved world, brought back by the next lease


async def test_a_lease_that_cannot_be_handed_back_leaves_the_turns_own_answer_standing(db, rig, monkeypatch):
    """The release in `finally` fails (the database went away a moment): logged, and the turn answers what it would
    have answered (here its own typed error), never the release's failure."""

    async def refused(*args, **kwargs):
        raise OSError("connection reset")

    async def failing_run(state, request, ctx):
        raise InvalidInput("the engine refused it", field="text")

    monkeypatch.setattr(stored_chat.sessions, "release", refused)
    monkeypatch.setattr(stored_chat.sessions, "release_token", refused)
    monkeypatch.setattr(rig.engine, "chat_on", failing_run)
    user = await _user(db)
    chat = StoredChat(rig.engine, db, rig.settings)
    with pytest.raises(InvalidInput, match="engine refused"):
        await chat.chat(ChatRequest(user_id="u", text="打开车窗"), user.id, rig.engine.deadline("text"))


async def test_racing_duplicates_on_other_sessions_save_one_turn_and_all_answer_its_reply(db):
    """Three requests with one client_message_id on three sessions, run together past the stored-reply check: one
    commits, the others' commits are refused whole (the world, then the turn log's key) and answer its reply."""
    models = FakeModelClient().sure("打开车窗", "cabin_window_open")
    rig = Rig(models=models, settings=with_budgets(turn_ms=TURN_MS))
    user = await _user(db)
    chat = StoredChat(rig.engine, db, rig.settings)
    real_run = rig.engine.chat_on
    ran = 0
    together = asyncio.Event()

    async def in_step(state, request, ctx):  # every turn has leased and checked for a stored reply before any runs
        nonlocal ran
        ran += 1
        if ran == 3:
            together.set()
        await together.wait()
        return await real_run(state, request, ctx)

    rig.engine.chat_on = in_step  # type: ignore[method-assign]
    answers = await asyncio.gather(
        *(
            chat.chat(
                ChatRequest(
                    user_id="u", session_id=f"s{n}-{uuid.uuid4().hex[:6]}", text="打开车窗", client_message_id="dup"
                ),
                user.id,
                rig.engine.deadline("text"),
            )
            for n in range(3)
        )
    )
    assert ran == 3
    assert len({(a.session_id, a.reply) for a in answers}) == 1
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM conversation_messages WHERE user_id = $1", user.id) == 2
