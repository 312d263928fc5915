"""A chat turn's two statements against a real PostgreSQL: begin (lease + open question) and commit (all or nothing)."""

from __future__ import annotations

import uuid

import pytest

from engine.session import StaleSession
from protocol.http_chat import ChatResponse, TurnStatus
from store import conversation, sessions, turn_log, users, worlds
from store.errors import TurnExists
from store.turn_commit import commit_turn


async def _user(db):
    async with db.connection() as conn:
        return (await users.shadow(conn, uuid.uuid4().hex)).id


def _turn(sid: str, status: TurnStatus, question=None):
    cmid = turn_log.new_client_message_id()
    asked = turn_log.user_message("空调温度调一下", session_id=sid, client_message_id=cmid, question=question)
    response = ChatResponse(session_id=sid, reply="调到多少度？", status=status, pending_slots=["temperature"])
    reply = turn_log.reply_message(response, now=turn_log.utc_now(), question_ttl_s=600)
    return dict(asked=asked, reply=reply, client_message_id=cmid, response=response.model_dump(mode="json"))


async def _count(db, user) -> int:
    async with db.connection() as conn:
        return await conn.fetchval("SELECT count(*) FROM conversation_messages WHERE user_id = $1", user)


async def test_a_turn_commits_state_messages_and_reply_and_the_next_begin_returns_its_question(db):
    user, sid = await _user(db), uuid.uuid4().hex
    lease = await sessions.acquire(db, sid, user, ttl_s=600)
    asking = _turn(sid, TurnStatus.waiting_slot)
    async with db.connection() as conn:
        await commit_turn(
            conn, user_id=user, session_id=sid, lease=lease, state={"turns": 1}, world=None, question_id=None, **asking
        )
    again = await sessions.acquire(db, sid, user, ttl_s=600)
    assert again.state == {"turns": 1} and again.version == lease.version + 1
    assert again.question is not None and again.question.id == asking["reply"].id
    answering = _turn(sid, TurnStatus.completed, question=again.question)
    async with db.connection() as conn:
        await commit_turn(
            conn,
            user_id=user,
            session_id=sid,
            lease=again,
            state={"turns": 2},
            world=None,
            question_id=again.question.id,
            **answering,
        )
        stored = await conversation.stored_reply(conn, user, answering["client_message_id"])
        page, _ = await conversation.page(conn, user, before_message_id=None, limit=10)
    assert stored["reply"] == "调到多少度？"
    assert [m.message_index for m in page] == [1, 2, 3, 4]
    assert page[1].metadata.question_status == "answered"
    third = await sessions.acquire(db, sid, user, ttl_s=600)
    assert third.question is None
    await sessions.release(db, third)


async def test_a_lapsed_lease_commits_nothing(db):
    user, sid = await _user(db), uuid.uuid4().hex
    lease = await sessions.acquire(db, sid, user, ttl_s=600)
    await sessions.release(db, lease)
    taker = await sessions.acquire(db, sid, user, ttl_s=600)
    with pytest.raises(StaleSession):
        async with db.connection() as conn:
            await commit_turn(
                conn,
                user_id=user,
                session_id=sid,
                lease=lease,
                state={"late": True},
                world=None,
                question_id=None,
                **_turn(sid, TurnStatus.completed),
            )
    assert await _count(db, user) == 0
    await sessions.release(db, taker)


async def test_a_world_changed_meanwhile_commits_nothing(db):
    user, sid = await _user(db), uuid.uuid4().hex
    first, second = await worlds.load(db, user), await worlds.load(db, user)
    async with db.transaction() as conn:
        await worlds.save(conn, user, first)
    lease = await sessions.acquire(db, sid, user, ttl_s=600)
    second.world.vehicle.window_open = True
    with pytest.raises(worlds.WorldChanged):
        async with db.connection() as conn:
            await commit_turn(
                conn,
                user_id=user,
                session_id=sid,
                lease=lease,
                state={"turns": 1},
                world=second,
                question_id=None,
                **_turn(sid, TurnStatus.completed),
            )
    assert await _count(db, user) == 0
    assert (await worlds.load(db, user)).world.vehicle.window_open is False
    await sessions.release(db, lease)


async def test_a_stale_question_is_expired_when_the_next_turn_begins(db):
    user, sid = await _user(db), uuid.uuid4().hex
    lease = await sessions.acquire(db, sid, user, ttl_s=600)
    asking = _turn(sid, TurnStatus.waiting_slot)
    asking["reply"].metadata.expires_at = turn_log.utc_now().replace(year=2020)
    async with db.connection() as conn:
        await commit_turn(
            conn, user_id=user, session_id=sid, lease=lease, state={}, world=None, question_id=None, **asking
        )
    again = await sessions.acquire(db, sid, user, ttl_s=600)
    assert again.question is None
    async with db.connection() as conn:
        status = await conn.fetchval(
            "SELECT metadata->>'question_status' FROM conversation_messages WHERE id = $1", asking["reply"].id
        )
    assert status == "expired"
    await sessions.release(db, again)


async def test_a_second_turn_with_the_same_client_message_id_on_another_session_commits_nothing(db):
    """One turn per (user, client_message_id): the one that commits second is a typed TurnExists (never the primary
    key's raw error), and none of it was written."""
    user = await _user(db)
    first_sid, second_sid = uuid.uuid4().hex, uuid.uuid4().hex
    first, second = _turn(first_sid, TurnStatus.completed), _turn(second_sid, TurnStatus.completed)
    second["client_message_id"] = first["client_message_id"]
    leases = [await sessions.acquire(db, sid, user, ttl_s=600) for sid in (first_sid, second_sid)]
    async with db.connection() as conn:
        await commit_turn(
            conn, user_id=user, session_id=first_sid, lease=leases[0], state={}, world=None, question_id=None, **first
        )
        with pytest.raises(TurnExists) as err:
            await commit_turn(
                conn,
                user_id=user,
                session_id=second_sid,
                lease=leases[1],
                state={"turns": 1},
                world=None,
                question_id=None,
                **second,
            )
    assert err.value.code == "duplicate_message"
    assert await _count(db, user) == 2  # the first turn's two messages only
    await sessions.release(db, leases[1])
