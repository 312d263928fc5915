"""The execution stage's reads (store.facts) against a real PostgreSQL: the range rules, user scoping, the newest
feedback per item and the profile."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from store import facts, users

T0 = datetime(2026, 12, 1, tzinfo=UTC)  # the range is [T0, T1)
T1 = T0 + timedelta(days=1)
H = timedelta(hours=1)


async def _user(db):
    async with db.connection() as conn:
        return (
            await users.register(conn, email=f"{uuid.uuid4().hex}@t.example", password_hash="x", display_name=None)
        ).id


async def _item(
    db,
    user_id,
    title,
    *,
    start_at=None,
    end_at=None,
    due_at=None,
    item_type="schedule",
    status="planned",
    deleted=False,
):
    async with db.connection() as conn:
        return await conn.fetchval(
            "INSERT INTO task_items (user_id, item_type, title, start_at, end_at, due_at, status, is_deleted, "
            "deleted_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $8 THEN now() END) RETURNING id",
            user_id,
            item_type,
            title,
            start_at,
            end_at,
            due_at,
            status,
            deleted,
        )


async def _feedback(db, user_id, item_id, occurred_at, *, note="反馈", deleted=False):
    async with db.connection() as conn:
        return await conn.fetchval(
            "INSERT INTO feedback_records (user_id, task_item_id, feedback_status, normalized_feedback, occurred_at,"
            " is_deleted, deleted_at) VALUES ($1, $2, 'completed', $3, $4, $5, CASE WHEN $5 THEN now() END)"
            " RETURNING id",
            user_id,
            item_id,
            note,
            occurred_at,
            deleted,
        )


async def _items(db, user_id, **filters):
    async with db.connection() as conn:
        return [i.title for i in await facts.items_in_range(conn, user_id, start_at=T0, end_at=T1, **filters)]


async def test_items_in_range_follow_the_timeline_rule_in_time_order(db):
    user, other = await _user(db), await _user(db)
    await _item(db, user, "inside", start_at=T0 + 9 * H, end_at=T0 + 10 * H)
    await _item(db, user, "overlaps the start", start_at=T0 - 2 * H, end_at=T0 + H)
    await _item(db, user, "ends at the start", start_at=T0 - 2 * H, end_at=T0)
    await _item(db, user, "starts at the end", start_at=T1, end_at=T1 + H)
    await _item(db, user, "ended before", start_at=T0 - 3 * H, end_at=T0 - H)
    await _item(db, user, "due inside", item_type="todo", due_at=T0 + 5 * H)
    await _item(db, user, "due at the end", item_type="todo", due_at=T1)
    await _item(db, user, "no time", item_type="todo")
    await _item(db, user, "deleted", start_at=T0 + 9 * H, end_at=T0 + 10 * H, deleted=True)
    await _item(db, other, "another user's", start_at=T0 + 9 * H, end_at=T0 + 10 * H)
    assert await _items(db, user) == ["overlaps the start", "ends at the start", "due inside", "inside"]


async def test_items_in_range_narrow_by_type_and_status(db):
    user = await _user(db)
    await _item(db, user, "schedule", start_at=T0 + H)
    await _item(db, user, "todo", item_type="todo", due_at=T0 + 2 * H)
    await _item(db, user, "done todo", item_type="todo", due_at=T0 + 3 * H, status="completed")
    assert await _items(db, user, item_types=("todo",)) == ["todo", "done todo"]
    assert await _items(db, user, statuses=("planned", "in_progress")) == ["schedule", "todo"]
    assert await _items(db, user, item_types=("todo",), statuses=("completed",)) == ["done todo"]
    assert await _items(db, user, item_types=()) == []


async def test_candidate_items_carry_version_and_status(db):
    user = await _user(db)
    item = await _item(db, user, "a", start_at=T0 + H, end_at=T0 + 2 * H, status="in_progress")
    async with db.connection() as conn:
        [candidate] = await facts.items_in_range(conn, user, start_at=T0, end_at=T1)
    assert (candidate.id, candidate.item_type, candidate.status, candidate.version, candidate.start_at) == (
        item,
        "schedule",
        "in_progress",
        1,
        T0 + H,
    )


async def test_feedbacks_in_range_by_occurrence_or_by_the_item_touching_the_range(db):
    user, other = await _user(db), await _user(db)
    inside = await _item(db, user, "inside", start_at=T0 + 9 * H, end_at=T0 + 10 * H)
    outside = await _item(db, user, "outside", start_at=T0 - 48 * H, end_at=T0 - 47 * H)
    deleted_inside = await _item(db, user, "deleted", start_at=T0 + 9 * H, deleted=True)
    await _feedback(db, user, outside, T0 + 20 * H, note="given in the range on an old item")
    await _feedback(db, user, inside, T1 + 5 * H, note="given later on an item in the range")
    await _feedback(db, user, outside, T0 - 40 * H, note="old item, old feedback")
    await _feedback(db, user, inside, T0 + 10 * H, note="deleted feedback", deleted=True)
    await _feedback(db, user, deleted_inside, T1 + 5 * H, note="later, on a deleted item")
    await _feedback(db, user, inside, T0 + 10 * H, note="in the range on an item in the range")
    await _feedback(db, other, await _item(db, other, "theirs", start_at=T0 + H), T0 + 2 * H, note="another user's")
    async with db.connection() as conn:
        found = await facts.feedbacks_in_range(conn, user, start_at=T0, end_at=T1)
    assert [f.normalized_feedback for f in found] == [
        "in the range on an item in the range",
        "given in the range on an old item",
        "given later on an item in the range",
    ]
    # each names its item as stored now, and whether that item has left the range (a review lists those apart)
    assert [(f.item_title, f.item_left_range) for f in found] == [
        ("inside", False),
        ("outside", True),
        ("inside", False),
    ]


async def test_latest_feedbacks_is_the_newest_per_item_and_only_the_users(db):
    user, other = await _user(db), await _user(db)
    a, b, c = [await _item(db, user, name, start_at=T0) for name in "abc"]
    theirs = await _item(db, other, "theirs", start_at=T0)
    newest_a = await _feedback(db, user, a, T0 + 5 * H)
    await _feedback(db, user, a, T0 + H)  # older, though inserted later
    await _feedback(db, user, a, T0 + 9 * H, deleted=True)
    newest_b = await _feedback(db, user, b, T0 + 2 * H)
    await _feedback(db, other, theirs, T0 + H)
    async with db.connection() as conn:
        latest = await facts.latest_feedbacks(conn, user, [a, b, c, theirs])
        assert await facts.latest_feedbacks(conn, user, []) == {}
    assert {item: fact.id for item, fact in latest.items()} == {a: newest_a, b: newest_b}
    assert latest[a].occurred_at == T0 + 5 * H


async def test_profile_data_is_empty_until_written_and_scoped_to_the_user(db):
    user, other = await _user(db), await _user(db)
    async with db.connection() as conn:
        assert await facts.profile_data(conn, user) == {}
        await conn.execute("INSERT INTO user_profiles (user_id, profile_data) VALUES ($1, $2)", user, {"作息": "早起"})
        assert await facts.profile_data(conn, user) == {"作息": "早起"}
        assert await facts.profile_data(conn, other) == {}
