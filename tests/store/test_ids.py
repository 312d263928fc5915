"""Time-ordered ids: version 7, later ones sort after earlier ones, and the database makes the same kind for the rows
it names itself (migration 0009), so a turn's inserts land next to the last ones in every index."""

from __future__ import annotations

import time
import uuid

from protocol.store import ConversationMessageMetadata
from store import users
from store.conversation import NewMessage
from store.ids import new_id


def _ms(value: uuid.UUID) -> int:
    return int.from_bytes(value.bytes[:6], "big")


def test_an_id_is_version_7_carries_the_time_and_later_ones_sort_after():
    before = time.time_ns() // 1_000_000
    ids = []
    for _ in range(3):
        ids.append(new_id())
        time.sleep(0.002)
    after = time.time_ns() // 1_000_000
    assert {i.version for i in ids} == {7} and {i.variant for i in ids} == {uuid.RFC_4122}
    assert before <= _ms(ids[0]) <= _ms(ids[-1]) <= after
    assert ids == sorted(ids) and [i.hex for i in ids] == sorted(i.hex for i in ids)
    assert len({new_id() for _ in range(10_000)}) == 10_000  # the random tail keeps ids of one ms apart


def test_a_new_message_is_named_by_a_time_ordered_id():
    message = NewMessage(
        role="user",
        raw_content="打开车窗",
        metadata=ConversationMessageMetadata(message_kind="input", client_message_id="c1"),
    )
    assert message.id.version == 7


async def test_the_database_names_new_users_with_time_ordered_ids_too(db):
    async with db.connection() as conn:
        before = time.time_ns() // 1_000_000
        first = await users.shadow(conn, uuid.uuid4().hex)
        time.sleep(0.002)
        second = await users.shadow(conn, uuid.uuid4().hex)
        made = [await conn.fetchval("SELECT baton_uuid7()") for _ in range(200)]
    assert first.id.version == second.id.version == 7 and first.id < second.id
    assert before <= _ms(first.id) <= time.time_ns() // 1_000_000
    assert {m.version for m in made} == {7} and {m.variant for m in made} == {uuid.RFC_4122} and len(set(made)) == 200
