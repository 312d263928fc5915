"""Two packs served from one cluster share the one PostgreSQL: a session is one assistant's conversation. A turn of
the other pack on it is refused (409 `session_other_assistant`) before anything runs, the session stays as it was and
goes on with its own assistant; the WebSocket's one conversation per user is one per user and assistant."""

from __future__ import annotations

import uuid

import pytest

from engine.session import SessionState
from protocol.http_chat import ChatRequest, FillSlotsRequest
from serve_app.agents.context import Caller
from serve_app.errors import STATUS_BY_ERROR
from serve_app.turns.stored import StoredChat
from store import users
from store.errors import Conflict, SessionOfOtherAssistant
from tests.support.fakes import Rig


async def _user(db):
    async with db.connection() as conn:
        return await users.shadow(conn, f"packs-{uuid.uuid4().hex[:8]}")


async def _row(db, user_id, session_id):
    async with db.connection() as conn:
        return await conn.fetchrow(
            "SELECT state, version, lease_token FROM sessions WHERE user_id = $1 AND id = $2", user_id, session_id
        )


def test_a_session_is_claimed_by_the_first_pack_that_saves_it():
    state = SessionState(session_id="s", user_id="u")
    assert state.claim("cockpit") and state.pack == "cockpit"
    assert state.claim("cockpit")
    assert not state.claim("timeflow") and state.pack == "cockpit"
    assert "cockpit assistant" in state.other_pack_message("timeflow")


async def test_a_cockpit_session_is_not_resumed_by_the_timeflow_app(db):
    cockpit, timeflow = Rig("cockpit"), Rig("timeflow")
    car, diary = StoredChat(cockpit.engine, db, cockpit.settings), StoredChat(timeflow.engine, db, timeflow.settings)
    user, sid = await _user(db), f"shared-{uuid.uuid4().hex[:8]}"

    def turn(text: str) -> ChatRequest:
        return ChatRequest(user_id="u", session_id=sid, text=text)

    await car.chat(turn("打开车窗"), user.id, cockpit.engine.deadline("text"))
    before = await _row(db, user.id, sid)
    assert before["state"]["pack"] == "cockpit"

    with pytest.raises(SessionOfOtherAssistant, match="cockpit assistant") as refused:
        await diary.chat(turn("明天下午三点开会"), user.id, timeflow.engine.deadline("text"))
    assert (
        refused.value.field == "session_id" and isinstance(refused.value, Conflict) and STATUS_BY_ERROR[Conflict] == 409
    )
    fill = FillSlotsRequest(user_id="u", session_id=sid, text="确认")
    with pytest.raises(SessionOfOtherAssistant):
        await diary.fill_slots(fill, user.id, timeflow.engine.deadline("text"))

    after = await _row(db, user.id, sid)
    assert (after["state"], after["version"], after["lease_token"]) == (before["state"], before["version"], None)
    # handed back at once: the cockpit conversation goes on, no session_busy
    await car.chat(turn("把车窗关上"), user.id, cockpit.engine.deadline("text"))
    assert (await _row(db, user.id, sid))["version"] == before["version"] + 1


async def test_a_session_saved_before_packs_were_recorded_is_adopted(db):
    timeflow = Rig("timeflow")
    user, sid = await _user(db), f"old-{uuid.uuid4().hex[:8]}"
    async with db.connection() as conn:
        old = SessionState(session_id=sid, user_id="u").model_dump(mode="json", exclude={"pack"})
        await conn.execute("INSERT INTO sessions (id, user_id, state) VALUES ($1, $2, $3)", sid, user.id, old)
    chat = StoredChat(timeflow.engine, db, timeflow.settings)
    await chat.chat(ChatRequest(user_id="u", session_id=sid, text="你好"), user.id, timeflow.engine.deadline("text"))
    assert (await _row(db, user.id, sid))["state"]["pack"] == "timeflow"


def test_the_websocket_conversation_is_one_per_user_and_assistant():
    user = users.User(id=uuid.uuid4(), business_user_id="b", email="e@example.com", password_hash="", display_name=None)
    ids = {Caller(user=user, key="k", pack=pack).session_id for pack in ("cockpit", "timeflow")}
    assert len(ids) == 2 and all(user.id.hex in i for i in ids)
