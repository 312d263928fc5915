"""Session leases and optimistic versions against a real PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid

import pytest

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


async def test_a_session_id_is_per_user_and_unknown_is_none_without_create(db):
    """Another user's session id says nothing about theirs: it is a new session of the caller's own, whose turns
    leave the owner's untouched (and fill-slots on it finds nothing)."""
    owner, other, sid = await _user(db), await _user(db), uuid.uuid4().hex
    mine = await sessions.acquire(db, sid, owner, ttl_s=600)
    async with db.transaction() as conn:
        await sessions.commit(conn, mine, {"turns": 1})
    assert await sessions.acquire(db, sid, other, ttl_s=600, create=False) is None
    theirs = await sessions.acquire(db, sid, other, ttl_s=600)  # no refusal, no wait: a session of their own
    assert theirs.state is None and theirs.version == 1
    async with db.transaction() as conn:
        await sessions.commit(conn, theirs, {"turns": 9})
    again = await sessions.acquire(db, sid, owner, ttl_s=600)
    assert again.state == {"turns": 1}
    await sessions.release(db, again)
    assert await sessions.acquire(db, uuid.uuid4().hex, owner, ttl_s=600, create=False) is None


async def test_waiting_for_a_busy_session_backs_off_instead_of_taking_a_connection_every_poll(db, monkeypatch):
    """The second turn waits the whole session_busy_wait_ms (800 ms) for a lease that is never handed back: it
    checks a handful of times (pauses doubling from 20 ms up to 200 ms), not once every 20 ms (about 40 checks)."""
    user, sid = await _user(db), uuid.uuid4().hex
    lease = await sessions.acquire(db, sid, user, ttl_s=600)
    taken = 0
    real = db.connection

    def counted():
        nonlocal taken
        taken += 1
        return real()

    monkeypatch.setattr(db, "connection", counted)
    with pytest.raises(SessionBusy):
        await sessions.acquire(db, sid, user, ttl_s=600, waits=sessions.LeaseWaits())
    monkeypatch.setattr(db, "connection", real)
    assert 2 <= taken <= 10, taken
    await sessions.release(db, lease)


async def test_a_waiter_is_woken_when_this_process_ends_the_lease(db):
    user, sid = await _user(db), uuid.uuid4().hex
    waits = sessions.LeaseWaits()
    lease = await sessions.acquire(db, sid, user, ttl_s=600)

    async def release_soon():
        await asyncio.sleep(0.05)
        await sessions.release(db, lease)
        waits.ended(user, sid)

    second, _ = await asyncio.gather(sessions.acquire(db, sid, user, ttl_s=600, waits=waits), release_soon())
    assert second is not None and second.token != lease.token
    assert len(waits) == 0  # nothing left behind
    await sessions.release(db, second)


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
