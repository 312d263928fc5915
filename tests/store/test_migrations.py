"""Migrations against a real PostgreSQL: idempotent, concurrent-safe, and the seed's constraints hold."""

from __future__ import annotations

import asyncio
import json
import uuid

import asyncpg
import pytest

from store.errors import MigrationError
from store.migrate import Migration, load_migrations, migrate


async def _connect(postgres):
    return await asyncpg.connect(postgres["dsn"])


async def test_migrations_twice_in_a_row_apply_nothing_the_second_time(postgres):
    schema = f"mig_{uuid.uuid4().hex[:8]}"
    conn = await _connect(postgres)
    try:
        first = await migrate(conn, schema)
        second = await migrate(conn, schema)
        tables = {
            r["table_name"]
            for r in await conn.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema
            )
        }
    finally:
        await conn.close()
    assert first == [m.version for m in load_migrations()] and second == []
    assert {
        "users",
        "user_profiles",
        "long_goals",
        "task_items",
        "conversation_messages",
        "feedback_records",
        "task_profile_snapshots",
        "write_requests",
        "operation_confirmations",
        "sessions",
        "chat_turns",
        "schema_migrations",
    } <= tables


async def test_two_replicas_migrating_together_do_not_race(postgres):
    schema = f"mig_{uuid.uuid4().hex[:8]}"
    conns = [await _connect(postgres) for _ in range(3)]
    try:
        results = await asyncio.gather(*(migrate(c, schema) for c in conns))
        applied = await conns[0].fetchval(f'SELECT count(*) FROM "{schema}".schema_migrations')
    finally:
        for c in conns:
            await c.close()
    assert sorted(len(r) for r in results) == [0, 0, len(load_migrations())]
    assert applied == len(load_migrations())


async def test_an_applied_migration_that_was_edited_is_refused(postgres):
    schema = f"mig_{uuid.uuid4().hex[:8]}"
    conn = await _connect(postgres)
    try:
        original = [Migration(1, "t", "CREATE TABLE t (x int);")]
        await migrate(conn, schema, original)
        with pytest.raises(MigrationError, match="changed"):
            await migrate(conn, schema, [Migration(1, "t", "CREATE TABLE t (x bigint);")])
    finally:
        await conn.close()


async def _user(conn) -> uuid.UUID:
    return await conn.fetchval(
        "INSERT INTO users (business_user_id, email, password_hash) VALUES ($1, $2, 'x') RETURNING id",
        uuid.uuid4().hex,
        f"{uuid.uuid4().hex}@t.example",
    )


@pytest.mark.parametrize(
    "sql, constraint",
    [
        (
            "INSERT INTO task_items (user_id, item_type, title) VALUES ($1, 'subtask', 'a')",
            "task_items_long_goal_binding_check",
        ),
        (
            "INSERT INTO task_items (user_id, item_type, title, version) VALUES ($1, 'todo', 'a', 0)",
            "task_items_version_positive",
        ),
        (
            "INSERT INTO task_items (user_id, item_type, title, is_deleted) VALUES ($1, 'todo', 'a', true)",
            "task_items_soft_delete_check",
        ),
        ("INSERT INTO task_items (user_id, item_type, title) VALUES ($1, 'todo', '  ')", "task_items_title_not_blank"),
        (
            "INSERT INTO conversation_messages (user_id, message_index, role, raw_content, metadata)"
            " VALUES ($1, 1, 'user', 'x', '[]'::jsonb)",
            "conversation_messages_metadata_object",
        ),
        (
            "INSERT INTO conversation_messages (user_id, message_index, role, modality, raw_content, metadata)"
            " VALUES ($1, 1, 'user', 'text', 'x', '{\"schema_version\": 1, \"message_kind\": \"input\"}'::jsonb)",
            "conversation_messages_metadata_rules",
        ),
        (
            "INSERT INTO conversation_messages (user_id, message_index, role, raw_content, metadata)"
            " VALUES ($1, 1, 'assistant', 'x',"
            ' \'{"schema_version": 1, "message_kind": "clarification_question", "question_status": "open"}\'::jsonb)',
            "conversation_messages_metadata_rules",
        ),
        (
            "INSERT INTO conversation_messages (user_id, message_index, role, modality, raw_content, metadata)"
            " VALUES ($1, 1, 'user', 'voice_asr', 'x',"
            ' \'{"schema_version": 1, "message_kind": "system_notice"}\'::jsonb)',
            "conversation_messages_source_url_check",
        ),
    ],
)
async def test_seed_constraints_refuse_inconsistent_rows(db, sql, constraint):
    async with db.connection() as conn:
        user_id = await _user(conn)
        with pytest.raises(asyncpg.CheckViolationError) as info:
            await conn.execute(sql, user_id)
    assert info.value.constraint_name == constraint


async def test_client_message_id_is_unique_per_user(db):
    meta = json.dumps({"schema_version": 1, "message_kind": "input", "client_message_id": "c_1"})
    sql = (
        "INSERT INTO conversation_messages (user_id, message_index, role, modality, raw_content, metadata)"
        " VALUES ($1, $2, 'user', 'text', 'x', $3::text::jsonb)"
    )
    async with db.connection() as conn:
        a, b = await _user(conn), await _user(conn)
        await conn.execute(sql, a, 1, meta)
        await conn.execute(sql, b, 1, meta)  # another user may reuse it
        with pytest.raises(asyncpg.UniqueViolationError):
            await conn.execute(sql, a, 2, meta)
