"""The conversation log (conversation_messages) and the stored replies of chat turns (chat_turns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg

from protocol.media import InputModality
from protocol.store import ConversationMessageDTO, ConversationMessageMetadata, MessageRole
from store.ids import new_id


@dataclass(frozen=True)
class NewMessage:
    role: MessageRole
    raw_content: str
    metadata: ConversationMessageMetadata
    modality: InputModality | None = None
    source_url: str | None = None
    id: UUID = field(default_factory=new_id)


_COLUMNS = "id, user_id, message_index, role, modality, raw_content, source_url, metadata, created_at"


def _dto(row: asyncpg.Record) -> ConversationMessageDTO:
    return ConversationMessageDTO.model_validate(dict(row))


def stored_metadata(message: NewMessage) -> dict[str, Any]:
    """A message's metadata as stored: what is set, plus the schema version and kind the table requires."""
    metadata = message.metadata.model_dump(mode="json", exclude_defaults=True)
    metadata["schema_version"] = 1
    metadata["message_kind"] = message.metadata.message_kind
    return metadata


async def append(conn: asyncpg.Connection, user_id: UUID, messages: list[NewMessage]) -> list[ConversationMessageDTO]:
    """Append messages with consecutive per-user indexes; call inside a transaction.

    The indexes come from the user's counter row (migration 0004), the one the turn commit advances too: its row
    lock keeps them gap-free under concurrent appends."""
    if not messages:
        return []
    last = await conn.fetchval(
        "INSERT INTO conversation_counters AS c (user_id, last_index) VALUES ($1, $2)"
        " ON CONFLICT (user_id) DO UPDATE SET last_index = c.last_index + $2 RETURNING c.last_index",
        user_id,
        len(messages),
    )
    first = last - len(messages)
    rows = []
    for offset, message in enumerate(messages, start=1):
        rows.append(
            await conn.fetchrow(
                "INSERT INTO conversation_messages"
                " (id, user_id, message_index, role, modality, raw_content, source_url, metadata)"
                f" VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {_COLUMNS}",
                message.id,
                user_id,
                first + offset,
                message.role,
                message.modality,
                message.raw_content,
                message.source_url,
                stored_metadata(message),
            )
        )
    return [_dto(r) for r in rows]


async def rewrite(conn: asyncpg.Connection, user_id: UUID, message: NewMessage) -> None:
    """Say an already logged message otherwise (its content and metadata), keeping its place in the log."""
    await conn.execute(
        "UPDATE conversation_messages SET raw_content = $3, metadata = $4 WHERE user_id = $1 AND id = $2",
        user_id,
        message.id,
        message.raw_content,
        stored_metadata(message),
    )


async def page(
    conn: asyncpg.Connection, user_id: UUID, *, before_message_id: UUID | None, limit: int
) -> tuple[list[ConversationMessageDTO], bool]:
    """Up to `limit` messages before `before_message_id` (or the newest), oldest first, and whether older ones exist."""
    before = None
    if before_message_id is not None:
        before = await conn.fetchval(
            "SELECT message_index FROM conversation_messages WHERE user_id = $1 AND id = $2", user_id, before_message_id
        )
        if before is None:
            return [], False
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM conversation_messages"
        " WHERE user_id = $1 AND ($2::integer IS NULL OR message_index < $2)"
        f" ORDER BY message_index DESC LIMIT $3",
        user_id,
        before,
        limit + 1,
    )
    has_more = len(rows) > limit
    return [_dto(r) for r in reversed(rows[:limit])], has_more


async def in_session(
    conn: asyncpg.Connection, user_id: UUID, session_id: str, *, limit: int
) -> list[ConversationMessageDTO]:
    """The last `limit` messages of one of the user's sessions (metadata.session_id), oldest first."""
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM conversation_messages WHERE user_id = $1 AND metadata->>'session_id' = $2"
        " ORDER BY message_index DESC LIMIT $3",
        user_id,
        session_id,
        limit,
    )
    return [_dto(r) for r in reversed(rows)]


async def expire_questions(conn: asyncpg.Connection, user_id: UUID) -> int:
    """Mark open clarification questions past their expiry as expired (seed 002's rule); returns how many."""
    result = await conn.execute(
        "UPDATE conversation_messages SET metadata = jsonb_set(metadata, '{question_status}', '\"expired\"')"
        " WHERE user_id = $1 AND metadata->>'question_status' = 'open'"
        " AND (metadata->>'expires_at')::timestamptz < now()",
        user_id,
    )
    return int(result.split()[-1])


async def open_question(
    conn: asyncpg.Connection, user_id: UUID, session_id: str | None = None
) -> ConversationMessageDTO | None:
    """The newest open, unexpired clarification question (of one session when given)."""
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM conversation_messages WHERE user_id = $1 AND metadata->>'question_status' = 'open'"
        f" AND (metadata->>'expires_at')::timestamptz >= now() AND ($2::text IS NULL OR metadata->>'session_id' = $2)"
        f" ORDER BY message_index DESC LIMIT 1",
        user_id,
        session_id,
    )
    return _dto(row) if row else None


async def close_question(conn: asyncpg.Connection, user_id: UUID, question_id: UUID, status: str) -> bool:
    """Move an open question to answered/expired; False if it was no longer open (someone else consumed it)."""
    result: str = await conn.execute(
        "UPDATE conversation_messages SET metadata = jsonb_set(metadata, '{question_status}', to_jsonb($3::text))"
        " WHERE user_id = $1 AND id = $2 AND metadata->>'message_kind' = 'clarification_question'"
        " AND metadata->>'question_status' = 'open'",
        user_id,
        question_id,
        status,
    )
    return result.endswith(" 1")


async def question(conn: asyncpg.Connection, user_id: UUID, question_id: UUID) -> ConversationMessageDTO | None:
    """The user's clarification question with this id while it is open and unexpired; None otherwise (unknown,
    answered, expired, or another user's: the caller cannot tell which)."""
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM conversation_messages WHERE user_id = $1 AND id = $2"
        f" AND metadata->>'message_kind' = 'clarification_question' AND metadata->>'question_status' = 'open'"
        f" AND (metadata->>'expires_at')::timestamptz >= now()",
        user_id,
        question_id,
    )
    return _dto(row) if row else None


async def message(conn: asyncpg.Connection, user_id: UUID, message_id: UUID) -> ConversationMessageDTO | None:
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM conversation_messages WHERE user_id = $1 AND id = $2", user_id, message_id
    )
    return _dto(row) if row else None


async def confirmation(
    conn: asyncpg.Connection, user_id: UUID, write_request_id: UUID
) -> ConversationMessageDTO | None:
    """The assistant's confirmation request that proposed this write request; None when the log holds none."""
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM conversation_messages WHERE user_id = $1"
        f" AND metadata->>'message_kind' = 'confirmation_request' AND metadata->>'write_request_id' = $2"
        " ORDER BY message_index DESC LIMIT 1",
        user_id,
        str(write_request_id),
    )
    return _dto(row) if row else None


async def after(
    conn: asyncpg.Connection, user_id: UUID, message_id: UUID | None, *, limit: int
) -> tuple[list[ConversationMessageDTO], bool]:
    """Up to `limit` messages after `message_id`, oldest first, and whether it was found (if not — unknown or
    another user's — the newest `limit` messages instead)."""
    seen = None
    if message_id is not None:
        seen = await conn.fetchval(
            "SELECT message_index FROM conversation_messages WHERE user_id = $1 AND id = $2", user_id, message_id
        )
    if seen is None:
        recent, _ = await page(conn, user_id, before_message_id=None, limit=limit)
        return recent, False
    rows = await conn.fetch(
        f"SELECT {_COLUMNS} FROM conversation_messages WHERE user_id = $1 AND message_index > $2"
        f" ORDER BY message_index LIMIT $3",
        user_id,
        seen,
        limit,
    )
    return [_dto(r) for r in rows], True


async def last_event(conn: asyncpg.Connection, user_id: UUID) -> ConversationMessageDTO | None:
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM conversation_messages WHERE user_id = $1 AND role <> 'user'"
        f" ORDER BY message_index DESC LIMIT 1",
        user_id,
    )
    return _dto(row) if row else None


async def stored_reply(conn: asyncpg.Connection, user_id: UUID, client_message_id: str) -> dict[str, Any] | None:
    """The reply a turn with this client_message_id already got, if any."""
    response: dict[str, Any] | None = await conn.fetchval(
        "SELECT response FROM chat_turns WHERE user_id = $1 AND client_message_id = $2", user_id, client_message_id
    )
    return response


async def store_reply(
    conn: asyncpg.Connection,
    user_id: UUID,
    client_message_id: str,
    session_id: str,
    input_message_id: UUID,
    response: dict[str, Any],
) -> None:
    await conn.execute(
        "INSERT INTO chat_turns (user_id, client_message_id, session_id, input_message_id, response)"
        " VALUES ($1, $2, $3, $4, $5)",
        user_id,
        client_message_id,
        session_id,
        input_message_id,
        response,
    )
