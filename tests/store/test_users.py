"""Shadow users against a real PostgreSQL: made once per local user_id, committed without waiting for the WAL flush,
and nothing else on the connection inherits that."""

from __future__ import annotations

import uuid

import pytest

from store import users
from store.errors import EmailReserved


async def _setting(conn) -> str:
    return await conn.fetchval("SHOW synchronous_commit")


async def test_a_shadow_user_is_made_once_and_the_connection_keeps_waiting_for_its_flushes(db):
    name = uuid.uuid4().hex
    async with db.connection() as conn:
        before = await _setting(conn)
        first = await users.shadow(conn, name)
        assert await _setting(conn) == before == "on"  # SET LOCAL ended with the insert's transaction
        again = await users.shadow(conn, name)
    assert first.id == again.id and first.business_user_id == again.business_user_id
    async with db.connection() as other:
        assert await other.fetchval("SELECT count(*) FROM users WHERE id = $1", first.id) == 1


async def test_inside_a_callers_transaction_the_callers_commit_is_left_as_it_was(db):
    async with db.connection() as conn:
        async with conn.transaction():
            user = await users.shadow(conn, uuid.uuid4().hex)
            assert await _setting(conn) == "on"
        assert await conn.fetchval("SELECT count(*) FROM users WHERE id = $1", user.id) == 1


async def test_racing_first_uses_of_one_local_user_id_all_get_the_one_user(db):
    """The first turns of a new local user arrive together: every one gets the same user, none an error. (The
    email's unique index is no arbiter of the insert's ON CONFLICT, so a racing insert used to fail on it.)"""
    import asyncio

    for _ in range(200):
        name = uuid.uuid4().hex

        async def first_use(name: str):
            async with db.connection() as conn:
                return await users.shadow(conn, name)

        made = await asyncio.gather(*(first_use(name) for _ in range(6)))
        assert len({user.id for user in made}) == 1
    async with db.connection() as conn:
        assert (
            await conn.fetchval("SELECT count(*) FROM users WHERE business_user_id = $1", users.SHADOW_PREFIX + name)
            == 1
        )


async def test_the_shadow_domain_is_reserved_and_a_lookup_makes_no_shadow_user(db):
    async with db.connection() as conn:
        taken = f"{uuid.uuid4().hex[:32]}@shadow.invalid"
        for email in (taken, "x@SHADOW.invalid", "y@a.shadow.invalid"):
            with pytest.raises(EmailReserved):
                await users.register(conn, email=email, password_hash="x", display_name=None)
        name = uuid.uuid4().hex
        assert await users.find_shadow(conn, name) is None
        assert await conn.fetchval("SELECT count(*) FROM users WHERE business_user_id = $1", "local:" + name) == 0
        made = await users.shadow(conn, name)
        assert await users.find_shadow(conn, name) == made
