"""The write gate against a real PostgreSQL: every refusal, idempotent replay, concurrent decides, atomicity."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from engine.errors import InvalidInput
from protocol.rest import WriteRequestCreate
from store import users, write_gate
from store.errors import (
    AlreadyDecided,
    IdempotencyMismatch,
    NotFound,
    PayloadChanged,
    RequestExpired,
    StaleVersion,
    UnsupportedWrite,
)

ITEM = {
    "item_type": "schedule",
    "title": "牙医复诊",
    "start_at": "2026-12-01T15:00:00+08:00",
    "end_at": "2026-12-01T16:00:00+08:00",
}


async def _user(db):
    async with db.connection() as conn:
        return (
            await users.register(conn, email=f"{uuid.uuid4().hex}@t.example", password_hash="x", display_name=None)
        ).id


async def _create(db, user_id, body=None, *, key=None, ttl_s=900, now=None):
    body = body or WriteRequestCreate(
        action="create", target_type="task_item", payload=ITEM, preview_text="新建日程：牙医复诊"
    )
    async with db.transaction() as conn:
        return await write_gate.create(
            conn, user_id, body, idempotency_key=key or uuid.uuid4().hex, ttl_s=ttl_s, now=now or datetime.now(UTC)
        )


async def _decide(db, user_id, request_id, decision="confirmed", key="k1", payload_hash=None):
    async with db.connection() as conn:
        return await write_gate.decide(
            conn, user_id, request_id, decision=decision, idempotency_key=key, payload_hash=payload_hash
        )


async def _count(db, sql, *args):
    async with db.connection() as conn:
        return await conn.fetchval(sql, *args)


async def test_create_stores_payload_hash_computed_by_sha256(db):
    user = await _user(db)
    created = await _create(db, user)
    expected = await _count(
        db,
        "SELECT encode(sha256(convert_to(payload::text, 'UTF8')), 'hex') FROM write_requests WHERE id = $1",
        created.write_request_id,
    )
    assert created.payload_hash == expected and len(expected) == 64
    assert created.confirmation_payload["preview_text"] == "新建日程：牙医复诊"
    assert await _count(db, "SELECT count(*) FROM task_items WHERE user_id = $1", user) == 0  # nothing written yet


async def test_confirm_applies_and_replay_returns_the_identical_result(db):
    user = await _user(db)
    created = await _create(db, user)
    first = await _decide(db, user, created.write_request_id, payload_hash=created.payload_hash)
    again = await _decide(db, user, created.write_request_id)
    assert first.status == "applied" and first.applied_target_id is not None
    assert again == first
    assert await _count(db, "SELECT count(*) FROM task_items WHERE user_id = $1", user) == 1
    assert await _count(db, "SELECT count(*) FROM operation_confirmations WHERE user_id = $1", user) == 1
    title = await _count(db, "SELECT title FROM task_items WHERE id = $1", first.applied_target_id)
    assert title == "牙医复诊"


async def test_reject_writes_nothing_and_a_later_confirm_is_refused(db):
    user = await _user(db)
    created = await _create(db, user)
    rejected = await _decide(db, user, created.write_request_id, decision="rejected", key="r1")
    assert rejected.status == "rejected" and rejected.applied_target_id is None
    with pytest.raises(AlreadyDecided):
        await _decide(db, user, created.write_request_id, decision="confirmed", key="k2")
    with pytest.raises(AlreadyDecided):  # same key, other decision
        await _decide(db, user, created.write_request_id, decision="confirmed", key="r1")
    assert await _count(db, "SELECT count(*) FROM task_items WHERE user_id = $1", user) == 0


async def test_creation_idempotency_key_returns_the_same_request(db):
    user = await _user(db)
    a = await _create(db, user, key="same")
    b = await _create(db, user, key="same")
    assert a == b
    assert await _count(db, "SELECT count(*) FROM write_requests WHERE user_id = $1", user) == 1


async def test_expired_request_is_refused_and_marked_expired(db):
    user = await _user(db)
    created = await _create(db, user, ttl_s=1, now=datetime.now(UTC) - timedelta(seconds=5))
    with pytest.raises(RequestExpired):
        await _decide(db, user, created.write_request_id)
    assert await _count(db, "SELECT status FROM write_requests WHERE id = $1", created.write_request_id) == "expired"
    assert await _count(db, "SELECT count(*) FROM operation_confirmations WHERE user_id = $1", user) == 0


async def test_echoed_hash_that_differs_is_refused(db):
    user = await _user(db)
    created = await _create(db, user)
    with pytest.raises(PayloadChanged):
        await _decide(db, user, created.write_request_id, payload_hash="0" * 64)
    assert await _count(db, "SELECT status FROM write_requests WHERE id = $1", created.write_request_id) == "pending"


async def test_stored_payload_edited_after_creation_is_refused(db):
    user = await _user(db)
    created = await _create(db, user)
    async with db.connection() as conn:  # someone edits the row behind the gate's back
        await conn.execute(
            "UPDATE write_requests SET payload = jsonb_set(payload, '{title}', '\"篡改\"') WHERE id = $1",
            created.write_request_id,
        )
    with pytest.raises(PayloadChanged):
        await _decide(db, user, created.write_request_id)
    assert await _count(db, "SELECT count(*) FROM task_items WHERE user_id = $1", user) == 0


async def test_stale_base_version_is_refused(db):
    user = await _user(db)
    item = (await _decide(db, user, (await _create(db, user)).write_request_id)).applied_target_id
    update = WriteRequestCreate(
        action="update",
        target_type="task_item",
        target_id=item,
        payload={"title": "改期"},
        preview_text="改标题",
        base_version=1,
    )
    first = await _create(db, user, update)
    second = await _create(db, user, update)
    assert (await _decide(db, user, first.write_request_id)).status == "applied"
    with pytest.raises(StaleVersion):
        await _decide(db, user, second.write_request_id)
    assert await _count(db, "SELECT version FROM task_items WHERE id = $1", item) == 2
    assert await _count(db, "SELECT status FROM write_requests WHERE id = $1", second.write_request_id) == "pending"


async def test_another_users_request_is_not_found(db):
    owner, other = await _user(db), await _user(db)
    created = await _create(db, owner)
    with pytest.raises(NotFound):
        await _decide(db, other, created.write_request_id)


async def test_unsupported_and_invalid_payloads_are_refused_at_creation(db):
    user = await _user(db)
    with pytest.raises(UnsupportedWrite):
        await _create(
            db, user, WriteRequestCreate(action="feedback", target_type="task_item", payload={}, preview_text="x")
        )
    with pytest.raises(InvalidInput):
        await _create(
            db,
            user,
            WriteRequestCreate(
                action="create",
                target_type="task_item",
                payload={"item_type": "subtask", "title": "无目标子任务"},
                preview_text="x",
            ),
        )


async def test_concurrent_decides_apply_exactly_once(db):
    user = await _user(db)
    created = await _create(db, user)
    results = await asyncio.gather(
        *(_decide(db, user, created.write_request_id, key=f"k{i}") for i in range(6)), return_exceptions=True
    )
    applied = [r for r in results if not isinstance(r, Exception)]
    assert len(applied) == 1 and applied[0].status == "applied"
    assert all(isinstance(r, AlreadyDecided) for r in results if isinstance(r, Exception))
    assert await _count(db, "SELECT count(*) FROM task_items WHERE user_id = $1", user) == 1


async def test_failure_between_business_write_and_status_update_leaves_nothing_half_applied(db):
    user = await _user(db)
    created = await _create(db, user)
    trigger = f"fail_{uuid.uuid4().hex[:8]}"
    async with db.connection() as conn:  # the status update (after the item insert) fails inside the transaction
        await conn.execute(f"""
            CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.status = 'applied' AND NEW.id = '{created.write_request_id}' THEN
              RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$;
            CREATE TRIGGER {trigger} BEFORE UPDATE ON write_requests FOR EACH ROW EXECUTE FUNCTION {trigger}();""")
    try:
        with pytest.raises(asyncpg.RaiseError, match="injected failure"):
            await _decide(db, user, created.write_request_id)
        assert await _count(db, "SELECT count(*) FROM task_items WHERE user_id = $1", user) == 0
        assert await _count(db, "SELECT count(*) FROM operation_confirmations WHERE user_id = $1", user) == 0
        assert (
            await _count(db, "SELECT status FROM write_requests WHERE id = $1", created.write_request_id) == "pending"
        )
    finally:
        async with db.connection() as conn:
            await conn.execute(f"DROP TRIGGER {trigger} ON write_requests; DROP FUNCTION {trigger}();")
    assert (await _decide(db, user, created.write_request_id)).status == "applied"  # and it still applies afterwards


async def test_an_idempotency_key_reused_for_another_target_is_a_mismatch_not_the_old_request(db):
    user = await _user(db)
    first, second = [
        (await _decide(db, user, (await _create(db, user)).write_request_id)).applied_target_id for _ in range(2)
    ]
    key = uuid.uuid4().hex

    def delete(target_id):
        return WriteRequestCreate(
            action="delete", target_type="task_item", target_id=target_id, payload={}, preview_text="删除"
        )

    made = await _create(db, user, delete(first), key=key)
    assert (await _create(db, user, delete(first), key=key)).write_request_id == made.write_request_id
    with pytest.raises(IdempotencyMismatch) as err:
        await _create(db, user, delete(second), key=key)
    assert err.value.code == "idempotency_mismatch" and err.value.field == "idempotency_key"
