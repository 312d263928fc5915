"""The conversation log against a real PostgreSQL: gap-free indexes under concurrency, paging, question lifecycle."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from protocol.store import ConversationMessageMetadata
from store import conversation, users
from store.conversation import NewMessage


async def _user(db):
    async with db.connection() as conn:
        return (await users.shadow(conn, uuid.uuid4().hex)).id


def _input(text: str) -> NewMessage:
    return NewMessage(
        role="user",
        modality="text",
        raw_content=text,
        metadata=ConversationMessageMetadata(message_kind="input", client_message_id=uuid.uuid4().hex),
    )


def _question(expires_at: datetime, session_id: str = "s") -> NewMessage:
    message_id = uuid.uuid4()
    return NewMessage(
        role="assistant",
        raw_content="要调到多少度？",
        id=message_id,
        metadata=ConversationMessageMetadata(
            message_kind="clarification_question",
            question_id=message_id,
            question_status="open",
            expires_at=expires_at,
            session_id=session_id,
            missing_fields=["temperature"],
        ),
    )


async def _append(db, user, messages):
    async with db.transaction() as conn:
        return await conversation.append(conn, user, messages)


async def test_concurrent_appends_keep_indexes_gap_free(db):
    user = await _user(db)
    await asyncio.gather(*(_append(db, user, [_input(f"第{i}句"), _input(f"第{i}句补充")]) for i in range(8)))
    async with db.connection() as conn:
        page, has_more = await conversation.page(conn, user, before_message_id=None, limit=100)
    assert [m.message_index for m in page] == list(range(1, 17)) and not has_more


async def test_paging_goes_backwards_oldest_first(db):
    user = await _user(db)
    stored = await _append(db, user, [_input(str(i)) for i in range(5)])
    async with db.connection() as conn:
        newest, more = await conversation.page(conn, user, before_message_id=None, limit=2)
        older, more_older = await conversation.page(conn, user, before_message_id=newest[0].id, limit=2)
        rest, none_left = await conversation.page(conn, user, before_message_id=older[0].id, limit=2)
        other_user = await conversation.page(
            conn, (await users.shadow(conn, "x" + uuid.uuid4().hex)).id, before_message_id=stored[0].id, limit=2
        )
    assert [m.raw_content for m in newest] == ["3", "4"] and more
    assert [m.raw_content for m in older] == ["1", "2"] and more_older
    assert [m.raw_content for m in rest] == ["0"] and not none_left
    assert other_user == ([], False)


async def test_questions_expire_and_are_answered_once(db):
    user, now = await _user(db), datetime.now(UTC)
    stale, live = _question(now - timedelta(seconds=1), "s1"), _question(now + timedelta(minutes=10), "s2")
    await _append(db, user, [stale, live])
    async with db.connection() as conn:
        assert await conversation.expire_questions(conn, user) == 1
        assert await conversation.open_question(conn, user, "s1") is None
        found = await conversation.open_question(conn, user, "s2")
        assert found is not None and found.id == live.id
        assert await conversation.close_question(conn, user, live.id, "answered")
        assert not await conversation.close_question(conn, user, live.id, "answered")  # already consumed
        statuses = {
            m.id: m.metadata.question_status
            for m in (await conversation.page(conn, user, before_message_id=None, limit=10))[0]
        }
    assert statuses == {stale.id: "expired", live.id: "answered"}
