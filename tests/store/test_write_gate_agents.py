"""The write gate's sub-agent writes (feedback, replan, goal split) against a real PostgreSQL: exactly the rows each
confirm applies, replays, rejects, creation refusals, version checks and all-or-nothing application."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from engine.errors import InvalidInput
from protocol.rest import WriteRequestCreate
from protocol.store import ConversationMessageMetadata
from store import conversation, users, write_gate
from store.errors import NotFound, StaleVersion, UnsupportedWrite

START = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)


async def _user(db):
    async with db.connection() as conn:
        return (
            await users.register(conn, email=f"{uuid.uuid4().hex}@t.example", password_hash="x", display_name=None)
        ).id


async def _item(db, user_id, *, title="写周报", start_at=START, end_at=START + timedelta(hours=1), due_at=None):
    async with db.connection() as conn:
        return await conn.fetchval(
            "INSERT INTO task_items (user_id, item_type, title, start_at, end_at, due_at)"
            " VALUES ($1, 'schedule', $2, $3, $4, $5) RETURNING id",
            user_id,
            title,
            start_at,
            end_at,
            due_at,
        )


async def _message(db, user_id):
    message = conversation.NewMessage(
        role="user",
        raw_content="帮我拆解考研计划",
        metadata=ConversationMessageMetadata(message_kind="input", client_message_id=uuid.uuid4().hex),
    )
    async with db.transaction() as conn:
        return (await conversation.append(conn, user_id, [message]))[0].id


async def _create(db, user_id, action, target_type, payload, *, source_message_id=None, **extra):
    body = WriteRequestCreate(action=action, target_type=target_type, payload=payload, preview_text="预览", **extra)
    async with db.transaction() as conn:
        return await write_gate.create(
            conn,
            user_id,
            body,
            idempotency_key=uuid.uuid4().hex,
            ttl_s=900,
            now=datetime.now(UTC),
            source_message_id=source_message_id,
        )


async def _decide(db, user_id, request_id, decision="confirmed", key="k1"):
    async with db.connection() as conn:
        return await write_gate.decide(
            conn, user_id, request_id, decision=decision, idempotency_key=key, payload_hash=None
        )


async def _val(db, sql, *args):
    async with db.connection() as conn:
        return await conn.fetchval(sql, *args)


async def _row(db, sql, *args):
    async with db.connection() as conn:
        return await conn.fetchrow(sql, *args)


async def _rows(db, user_id):
    async with db.connection() as conn:
        return await conn.fetch(
            "SELECT status, version FROM task_items WHERE user_id = $1 ORDER BY version, id", user_id
        )


def _feedback(item_id, *, status="completed", version=1):
    return {
        "task_item_id": str(item_id),
        "item_version": version,
        "feedback_status": status,
        "normalized_feedback": "周报写完了",
        "duration_minutes": 50,
        "occurred_at": "2026-12-01T16:00:00+08:00",
    }


# --- feedback ---------------------------------------------------------------------------------------------------


async def test_feedback_confirm_inserts_the_record_and_completes_the_item(db):
    user = await _user(db)
    item, source = await _item(db, user), await _message(db, user)
    created = await _create(db, user, "feedback", "feedback", _feedback(item), source_message_id=source)
    first = await _decide(db, user, created.write_request_id)
    again = await _decide(db, user, created.write_request_id)
    assert first.status == "applied" and again == first
    record = await _row(db, "SELECT * FROM feedback_records WHERE user_id = $1", user)
    assert first.applied_target_id == record["id"]
    assert (
        record["task_item_id"],
        record["source_message_id"],
        record["feedback_status"],
        record["normalized_feedback"],
        record["duration_minutes"],
        record["occurred_at"],
    ) == (item, source, "completed", "周报写完了", 50, START + timedelta(hours=1))
    assert await _val(db, "SELECT count(*) FROM feedback_records WHERE user_id = $1", user) == 1
    assert tuple(await _row(db, "SELECT status, version FROM task_items WHERE id = $1", item)) == ("completed", 2)


async def test_feedback_that_does_not_end_the_item_leaves_the_item_alone(db):
    user = await _user(db)
    item = await _item(db, user)
    created = await _create(db, user, "feedback", "feedback", _feedback(item, status="partially_completed"))
    assert (await _decide(db, user, created.write_request_id)).status == "applied"
    assert await _val(db, "SELECT source_message_id FROM feedback_records WHERE user_id = $1", user) is None
    assert tuple(await _row(db, "SELECT status, version FROM task_items WHERE id = $1", item)) == ("planned", 1)


async def test_rejected_feedback_writes_nothing(db):
    user = await _user(db)
    item = await _item(db, user)
    created = await _create(db, user, "feedback", "feedback", _feedback(item))
    rejected = await _decide(db, user, created.write_request_id, decision="rejected")
    assert rejected.status == "rejected" and rejected.applied_target_id is None
    assert await _val(db, "SELECT count(*) FROM feedback_records WHERE user_id = $1", user) == 0
    assert tuple(await _row(db, "SELECT status, version FROM task_items WHERE id = $1", item)) == ("planned", 1)


async def test_feedback_on_another_users_or_a_deleted_item_is_not_found_at_creation(db):
    owner, other = await _user(db), await _user(db)
    item = await _item(db, owner)
    with pytest.raises(NotFound) as caught:
        await _create(db, other, "feedback", "feedback", _feedback(item))
    assert caught.value.field == "payload.task_item_id"
    await _val(db, "UPDATE task_items SET is_deleted = true, deleted_at = now() WHERE id = $1", item)
    with pytest.raises(NotFound):
        await _create(db, owner, "feedback", "feedback", _feedback(item))
    assert await _val(db, "SELECT count(*) FROM write_requests WHERE user_id = ANY($1::uuid[])", [owner, other]) == 0


async def test_feedback_against_a_stale_item_version_writes_no_feedback(db):
    user = await _user(db)
    item = await _item(db, user)
    created = await _create(db, user, "feedback", "feedback", _feedback(item))
    await _val(db, "UPDATE task_items SET title = '改过', version = 2 WHERE id = $1", item)
    with pytest.raises(StaleVersion) as caught:
        await _decide(db, user, created.write_request_id)
    assert caught.value.field == "payload.item_version"
    assert await _val(db, "SELECT count(*) FROM feedback_records WHERE user_id = $1", user) == 0
    assert tuple(await _row(db, "SELECT status, version FROM task_items WHERE id = $1", item)) == ("planned", 2)
    assert await _val(db, "SELECT status FROM write_requests WHERE id = $1", created.write_request_id) == "pending"


async def test_sub_agent_writes_carry_neither_target_id_nor_base_version_and_other_pairs_are_unsupported(db):
    user = await _user(db)
    item = await _item(db, user)
    with pytest.raises(InvalidInput) as caught:
        await _create(db, user, "feedback", "feedback", _feedback(item), base_version=1)
    assert caught.value.field == "base_version"
    with pytest.raises(InvalidInput):
        await _create(db, user, "feedback", "feedback", {**_feedback(item), "feedback_status": "done"})
    with pytest.raises(UnsupportedWrite):
        await _create(db, user, "feedback", "task_item", _feedback(item))


# --- replan -----------------------------------------------------------------------------------------------------


async def test_replan_applies_every_change_only_to_the_fields_it_sets(db):
    user = await _user(db)
    due = START + timedelta(days=3)
    a, b = await _item(db, user, title="A"), await _item(db, user, title="B", due_at=due)
    payload = {
        "summary": "整体后移一天",
        "changes": [
            {
                "task_item_id": str(a),
                "base_version": 1,
                "start_at": "2026-12-02T15:00:00+08:00",
                "end_at": "2026-12-02T16:00:00+08:00",
            },
            {"task_item_id": str(b), "base_version": 1, "status": "deferred"},
        ],
    }
    created = await _create(db, user, "replan", "task_item", payload)
    first = await _decide(db, user, created.write_request_id)
    assert first.status == "applied" and first.applied_target_id == a
    assert await _decide(db, user, created.write_request_id) == first
    row_a = await _row(db, "SELECT * FROM task_items WHERE id = $1", a)
    assert (row_a["start_at"], row_a["end_at"], row_a["status"], row_a["title"], row_a["version"]) == (
        START + timedelta(days=1),
        START + timedelta(days=1, hours=1),
        "planned",
        "A",
        2,
    )
    row_b = await _row(db, "SELECT * FROM task_items WHERE id = $1", b)
    assert (row_b["start_at"], row_b["due_at"], row_b["status"], row_b["title"], row_b["version"]) == (
        START,
        due,
        "deferred",
        "B",
        2,
    )


async def test_replan_with_one_stale_change_applies_none(db):
    user = await _user(db)
    a, b = await _item(db, user), await _item(db, user)
    await _val(db, "UPDATE task_items SET version = 2 WHERE id = $1", b)
    payload = {
        "summary": "改期",
        "changes": [
            {"task_item_id": str(a), "base_version": 1, "status": "in_progress"},
            {"task_item_id": str(b), "base_version": 1, "status": "in_progress"},
        ],
    }
    created = await _create(db, user, "replan", "task_item", payload)
    with pytest.raises(StaleVersion) as caught:
        await _decide(db, user, created.write_request_id)
    assert caught.value.field == "payload.changes.1.base_version"
    assert [tuple(r) for r in await _rows(db, user)] == [("planned", 1), ("planned", 2)]
    assert await _val(db, "SELECT status FROM write_requests WHERE id = $1", created.write_request_id) == "pending"


async def test_replan_ending_before_its_start_is_refused(db):
    user = await _user(db)
    a, b = await _item(db, user), await _item(db, user)
    with pytest.raises(InvalidInput) as caught:  # the change itself
        await _create(
            db,
            user,
            "replan",
            "task_item",
            {
                "summary": "x",
                "changes": [
                    {
                        "task_item_id": str(a),
                        "base_version": 1,
                        "start_at": "2026-12-02T15:00:00+08:00",
                        "end_at": "2026-12-02T14:00:00+08:00",
                    }
                ],
            },
        )
    assert caught.value.field == "payload.changes.0"
    # the second change moves only end_at, to before the start the item keeps; the first change must not stay applied
    created = await _create(
        db,
        user,
        "replan",
        "task_item",
        {
            "summary": "x",
            "changes": [
                {"task_item_id": str(a), "base_version": 1, "status": "completed"},
                {"task_item_id": str(b), "base_version": 1, "end_at": "2026-12-01T14:00:00+08:00"},
            ],
        },
    )
    with pytest.raises(InvalidInput) as caught:
        await _decide(db, user, created.write_request_id)
    assert caught.value.field == "payload.changes.1"
    assert [tuple(r) for r in await _rows(db, user)] == [("planned", 1), ("planned", 1)]
    assert await _val(db, "SELECT count(*) FROM operation_confirmations WHERE user_id = $1", user) == 0


async def test_replan_naming_another_users_item_is_not_found_and_reject_writes_nothing(db):
    owner, other = await _user(db), await _user(db)
    mine, theirs = await _item(db, owner), await _item(db, other)
    with pytest.raises(NotFound) as caught:
        await _create(
            db,
            owner,
            "replan",
            "task_item",
            {
                "summary": "x",
                "changes": [
                    {"task_item_id": str(mine), "base_version": 1, "status": "deferred"},
                    {"task_item_id": str(theirs), "base_version": 1, "status": "deferred"},
                ],
            },
        )
    assert caught.value.field == "payload.changes.1.task_item_id"
    created = await _create(
        db,
        owner,
        "replan",
        "task_item",
        {"summary": "x", "changes": [{"task_item_id": str(mine), "base_version": 1, "status": "deferred"}]},
    )
    assert (await _decide(db, owner, created.write_request_id, decision="rejected")).status == "rejected"
    assert [tuple(r) for r in await _rows(db, owner)] == [("planned", 1)]


# --- goal split -------------------------------------------------------------------------------------------------

GOAL_SPLIT = {
    "goal": {"title": "考研", "plan_overview": "先数学后专业课", "deadline_at": "2027-12-20T00:00:00+08:00"},
    "subtasks": [
        {"title": "高数第一章", "due_at": "2026-12-07T00:00:00+08:00"},
        {"title": "英语单词", "start_at": "2026-12-02T07:00:00+08:00", "end_at": "2026-12-02T08:00:00+08:00"},
    ],
    "task_profile_summary": "每天早上能学两小时",
}


async def _goal_rows(db, user_id):
    return tuple(
        [
            await _val(db, f"SELECT count(*) FROM {table} WHERE user_id = $1", user_id)
            for table in ("long_goals", "task_items", "task_profile_snapshots")
        ]
    )


async def test_goal_split_without_a_source_message_is_refused_at_creation(db):
    user = await _user(db)
    with pytest.raises(InvalidInput) as caught:
        await _create(db, user, "goal_split", "long_goal", GOAL_SPLIT)
    assert caught.value.field == "source_message_id"
    assert await _val(db, "SELECT count(*) FROM write_requests WHERE user_id = $1", user) == 0


async def test_goal_split_subtask_ending_before_its_start_is_refused_at_creation(db):
    user = await _user(db)
    bad = {
        **GOAL_SPLIT,
        "subtasks": [
            {"title": "倒着的", "start_at": "2026-12-02T08:00:00+08:00", "end_at": "2026-12-02T07:00:00+08:00"}
        ],
    }
    with pytest.raises(InvalidInput) as caught:
        await _create(db, user, "goal_split", "long_goal", bad, source_message_id=await _message(db, user))
    assert caught.value.field == "payload.subtasks.0"


async def test_goal_split_applies_goal_subtasks_and_snapshot_together(db):
    user = await _user(db)
    source = await _message(db, user)
    created = await _create(db, user, "goal_split", "long_goal", GOAL_SPLIT, source_message_id=source)
    first = await _decide(db, user, created.write_request_id)
    assert first.status == "applied" and await _decide(db, user, created.write_request_id) == first
    goal = await _row(db, "SELECT * FROM long_goals WHERE user_id = $1", user)
    assert first.applied_target_id == goal["id"]
    assert (goal["title"], goal["plan_overview"], goal["status"]) == ("考研", "先数学后专业课", "active")
    async with db.connection() as conn:
        subtasks = await conn.fetch("SELECT * FROM task_items WHERE user_id = $1 ORDER BY title", user)
    assert sorted(s["title"] for s in subtasks) == ["英语单词", "高数第一章"]
    assert all(s["item_type"] == "subtask" and s["long_goal_id"] == goal["id"] and s["version"] == 1 for s in subtasks)
    snapshot = await _row(db, "SELECT * FROM task_profile_snapshots WHERE user_id = $1", user)
    assert (snapshot["long_goal_id"], snapshot["profile_summary"], snapshot["source_message_id"]) == (
        goal["id"],
        "每天早上能学两小时",
        source,
    )
    assert await _goal_rows(db, user) == (1, 2, 1)


async def test_rejected_goal_split_writes_nothing(db):
    user = await _user(db)
    created = await _create(db, user, "goal_split", "long_goal", GOAL_SPLIT, source_message_id=await _message(db, user))
    assert (await _decide(db, user, created.write_request_id, decision="rejected")).applied_target_id is None
    assert await _goal_rows(db, user) == (0, 0, 0)


@pytest.mark.parametrize("failing_table", ["task_items", "task_profile_snapshots"])
async def test_goal_split_failing_after_the_goal_insert_leaves_nothing(db, failing_table):
    user = await _user(db)
    created = await _create(db, user, "goal_split", "long_goal", GOAL_SPLIT, source_message_id=await _message(db, user))
    trigger = f"fail_{uuid.uuid4().hex[:8]}"
    async with db.connection() as conn:
        await conn.execute(f"""
            CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.user_id = '{user}' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$;
            CREATE TRIGGER {trigger} BEFORE INSERT ON {failing_table} FOR EACH ROW EXECUTE FUNCTION {trigger}();""")
    try:
        with pytest.raises(asyncpg.RaiseError, match="injected failure"):
            await _decide(db, user, created.write_request_id)
        assert await _goal_rows(db, user) == (0, 0, 0)
        assert await _val(db, "SELECT status FROM write_requests WHERE id = $1", created.write_request_id) == "pending"
    finally:
        async with db.connection() as conn:
            await conn.execute(f"DROP TRIGGER {trigger} ON {failing_table}; DROP FUNCTION {trigger}();")
    assert (await _decide(db, user, created.write_request_id)).status == "applied"
    assert await _goal_rows(db, user) == (1, 2, 1)
