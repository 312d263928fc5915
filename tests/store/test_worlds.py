"""Each user's simulated world in PostgreSQL: per user, saved with an optimistic version, first-sight order statuses."""

from __future__ import annotations

import uuid

import pytest

from engine.plugins import ORDER_STATUSES, World
from store import users, worlds


async def _user(db):
    async with db.connection() as conn:
        return (await users.shadow(conn, uuid.uuid4().hex)).id


async def test_a_new_user_has_the_default_world_and_saving_it_creates_the_row(db):
    user = await _user(db)
    loaded = await worlds.load(db, user)
    assert loaded.version == 0 and loaded.world == World()
    loaded.world.vehicle.window_open = True
    loaded.world.order_status("A12345")
    async with db.transaction() as conn:
        await worlds.save(conn, user, loaded)
    again = await worlds.load(db, user)
    assert again.version == 1 and again.world.vehicle.window_open is True
    assert again.world.orders == {"A12345": "pending_shipment"}


async def test_two_users_have_two_worlds(db):
    a, b = await _user(db), await _user(db)
    mine = await worlds.load(db, a)
    mine.world.orders["A12345"] = "cancelled"
    async with db.transaction() as conn:
        await worlds.save(conn, a, mine)
    theirs = await worlds.load(db, b)
    assert theirs.world.order_status("A12345") == "pending_shipment", "one user's cancel is not another's"


async def test_a_save_over_a_newer_world_is_refused_and_writes_nothing(db):
    user = await _user(db)
    first, second = await worlds.load(db, user), await worlds.load(db, user)
    first.world.vehicle.temperature = 20
    async with db.transaction() as conn:
        await worlds.save(conn, user, first)
    second.world.vehicle.temperature = 30
    with pytest.raises(worlds.WorldChanged):
        async with db.transaction() as conn:
            await worlds.save(conn, user, second)
    assert (await worlds.load(db, user)).world.vehicle.temperature == 20


def test_an_order_seen_first_gets_the_status_its_id_hashes_to():
    import hashlib

    for order in ("A12345", "B777", "order-9"):
        expected = ORDER_STATUSES[int(hashlib.sha256(order.encode()).hexdigest(), 16) % 3]
        assert World().order_status(order) == expected


async def test_the_session_lease_brings_the_users_world_along(db):
    from store import sessions

    user = await _user(db)
    lease = await sessions.acquire(db, uuid.uuid4().hex, user, ttl_s=600)
    fresh = worlds.leased(lease.world, lease.world_version)
    assert lease.world is None and fresh.version == 0 and fresh.world == World()
    await sessions.release(db, lease)
    fresh.world.vehicle.window_open = True
    async with db.transaction() as conn:
        await worlds.save(conn, user, fresh)
    again = await sessions.acquire(db, lease.session_id, user, ttl_s=600)
    seen = worlds.leased(again.world, again.world_version)
    assert seen.version == 1 and seen.world.vehicle.window_open is True
    assert seen == await worlds.load(db, user)
    await sessions.release(db, again)
