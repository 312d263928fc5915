"""Session leases and optimistic versions against a real PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from engine.errors import SessionForbidden
from engine.session import StaleSession
from store import sessions, users
from store.errors import SessionBusy


async def _user(db):
    async with db.connection() as conn:
        return (await users.shadow(conn, uuid.uuid4().hex)).id


async def test_second_lease_waits_then_is_busy_and_commit_bumps_the_version(db):
    user, sid = await _user(db), uuid.uuid4().hex
    lease = await sessions.acquire(db, sid, user, ttl_s=600)
    assert lease.state is None and lease.version == 1
    with pytest.raises(SessionBusy):
        await sessions.acquire(db, sid, user, ttl_s=600)
    async with db.transaction() as conn:
        assert await sessions.commit(conn, lease, {"turns": 1}) == 2
    again = await sessions.acquire(db, sid, user, ttl_s=600)
    assert again.state == {"turns": 1} and again.version == 2
    await sessions.release(db, again)


async def test_a_waiting_turn_gets_the_session_once_the_first_commits(db):
    user, sid = await _user(db), uuid.uuid4().hex
    lease = await sessions.acquire(db, sid, user, ttl_s=600)

    async def finish_soon():
        await asyncio.sleep(0.2)
        async with db.transaction() as conn:
            await sessions.commit(conn, lease, {"turns": 1})

    second, _ = await asyncio.gather(sessions.acquire(db, sid, user, ttl_s=600), finish_soon())
    assert second.state == {"turns": 1}
    await sessions.release(db, second)


async def test_another_users_session_is_forbidden_and_unknown_is_none_without_create(db):
    owner, other, sid = await _user(db), await _user(db), uuid.uuid4().hex
    await sessions.release(db, await sessions.acquire(db, sid, owner, ttl_s=600))
    with pytest.raises(SessionForbidden):
        await sessions.acquire(db, sid, other, ttl_s=600)
    assert await sessions.acquire(db, uuid.uuid4().hex, owner, ttl_s=600, create=False) is None


async def test_a_lapsed_lease_cannot_commit_over_a_newer_turn(db):
    user, sid = await _user(db), uuid.uuid4().hex
    stale = await sessions.acquire(db, sid, user, ttl_s=600)
    async with db.connection() as conn:  # the holder's replica died: its lease ran out
        await conn.execute("UPDATE sessions SET lease_until = now() - interval '1 second' WHERE id = $1", sid)
    newer = await sessions.acquire(db, sid, user, ttl_s=600)
    async with db.transaction() as conn:
        await sessions.commit(conn, newer, {"by": "newer"})
    with pytest.raises(StaleSession):
        async with db.transaction() as conn:
            await sessions.commit(conn, stale, {"by": "stale"})
    check = await sessions.acquire(db, sid, user, ttl_s=600)
    assert check.state == {"by": "newer"}
    await sessions.release(db, check)


async def test_waiting_for_a_busy_session_ends_at_the_turns_own_lease_deadline(db):
    """The busy wait (800 ms by config) never outlasts what the turn has left: here 100 ms."""
    import time

    user, sid = await _user(db), uuid.uuid4().hex
    lease = await sessions.acquire(db, sid, user, ttl_s=600)
    t0 = time.perf_counter()
    with pytest.raises(SessionBusy):
        await sessions.acquire(db, sid, user, ttl_s=600, wait_until=time.time() + 0.1)
    assert time.perf_counter() - t0 < 0.3
    await sessions.release(db, lease)
