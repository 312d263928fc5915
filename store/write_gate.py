"""The write-confirmation gate (seed 002): every write is a stored request first, applied only once confirmed.

A request stores its payload, the payload's sha256 (computed once, here, with PostgreSQL's built-in
`sha256()`), a preview and an expiry. Deciding it records one operation_confirmation; a confirmation
applies the write to the business table in the same transaction, with optimistic version checks.
The sub-agents' writes (feedback, replan, goal split) have their appliers in store.appliers, the business tables'
and the profile's are in store.table_writes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from engine.errors import InvalidInput
from protocol.rest import ProfilePayload, WriteRequestCreate, WriteRequestCreated
from protocol.store import WriteDecisionResult
from store import appliers, table_writes
from store.appliers import validated
from store.errors import (
    AlreadyDecided,
    IdempotencyMismatch,
    NotFound,
    PayloadChanged,
    RequestExpired,
    UnsupportedWrite,
)
from store.table_writes import TABLES as TABLES  # re-exported: the API document reads the tables from here

PAYLOAD_HASH_SQL = "encode(sha256(convert_to({}::text, 'UTF8')), 'hex')"
SUPPORTED = {
    ("create", "task_item"),
    ("update", "task_item"),
    ("delete", "task_item"),
    ("create", "long_goal"),
    ("update", "long_goal"),
    ("delete", "long_goal"),
    ("update", "profile"),
    ("feedback", "feedback"),
    ("replan", "task_item"),
    ("goal_split", "long_goal"),
}
MESSAGES = {"applied": "The change was applied.", "rejected": "The change was rejected; nothing was written."}


def check_payload(body: WriteRequestCreate) -> None:
    """Refuse, at creation, a write the gate could never apply."""
    if (body.action, body.target_type) not in SUPPORTED:
        raise UnsupportedWrite(
            f"'{body.action}' on '{body.target_type}' is not supported by the write gate.", field="action"
        )
    if (body.action, body.target_type) in appliers.AGENT_WRITES:
        appliers.check_body(body)
    elif body.target_type == "profile":
        validated(ProfilePayload, body.payload)
    elif body.action == "create":
        validated(TABLES[body.target_type].payload, body.payload)
    elif body.action == "update":
        unknown = set(body.payload) - set(TABLES[body.target_type].fields)
        if unknown or not body.payload:
            raise InvalidInput(
                f"An update payload holds only fields of {body.target_type}; unknown: {sorted(unknown)}.",
                field="payload",
            )
    elif body.payload:
        raise InvalidInput("A delete carries an empty payload.", field="payload")


def _confirmation_payload(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "write_request_id": str(row["id"]),
        "action": row["action"],
        "target_type": row["target_type"],
        "target_id": str(row["target_id"]) if row["target_id"] else None,
        "payload": row["payload"],
        "payload_hash": row["payload_hash"],
        "preview_text": row["preview_text"],
        "base_version": row["base_version"],
        "expires_at": row["expires_at"].isoformat(),
    }


async def create(
    conn: asyncpg.Connection,
    user_id: UUID,
    body: WriteRequestCreate,
    *,
    idempotency_key: str,
    ttl_s: int,
    now: datetime,
    source_message_id: UUID | None = None,
) -> WriteRequestCreated:
    """Store a pending request; the same idempotency key again returns the request it created when the request is the
    same (action, target, base version and payload), else IdempotencyMismatch."""
    check_payload(body)
    if (body.action, body.target_type) in appliers.AGENT_WRITES:
        await appliers.check(conn, user_id, body, source_message_id)
    elif body.action != "create" and body.target_type != "profile":
        await table_writes.current_row(conn, TABLES[body.target_type], user_id, body.target_id, lock=False)
    row = await conn.fetchrow(
        "INSERT INTO write_requests (user_id, source_message_id, action, target_type, target_id, payload, payload_hash,"
        f" preview_text, idempotency_key, base_version, expires_at) VALUES ($1, $2, $3, $4, $5, $6::jsonb,"
        f" {PAYLOAD_HASH_SQL.format('$6::jsonb')}, $7, $8, $9, $10)"
        " ON CONFLICT (user_id, idempotency_key) DO NOTHING RETURNING *",
        user_id,
        source_message_id,
        body.action,
        body.target_type,
        body.target_id,
        body.payload,
        body.preview_text,
        idempotency_key,
        body.base_version,
        now + timedelta(seconds=ttl_s),
    )
    if row is None:
        row = await conn.fetchrow(
            "SELECT * FROM write_requests WHERE user_id = $1 AND idempotency_key = $2", user_id, idempotency_key
        )
        same = await conn.fetchval(
            f"SELECT {PAYLOAD_HASH_SQL.format('$1::jsonb')} = $2", body.payload, row["payload_hash"]
        )
        stored = (row["action"], row["target_type"], row["target_id"], row["base_version"])
        if not same or stored != (body.action, body.target_type, body.target_id, body.base_version):
            raise IdempotencyMismatch(
                "This idempotency key already created a different write request (another action, target, version or "
                "payload); use a new key for a new request.",
                field="idempotency_key",
            )
    return WriteRequestCreated(
        write_request_id=row["id"], payload_hash=row["payload_hash"], confirmation_payload=_confirmation_payload(row)
    )


class _Expired(Exception):
    """Raised inside the decide transaction after marking the request expired, so that update commits first."""


async def decide(
    conn: asyncpg.Connection,
    user_id: UUID,
    write_request_id: UUID,
    *,
    decision: str,
    idempotency_key: str,
    payload_hash: str | None,
) -> WriteDecisionResult:
    """Record a decision and, when confirmed, apply the write, all in one transaction; replays are answered from the
    record."""
    try:
        async with conn.transaction():
            return await _decide(conn, user_id, write_request_id, decision, idempotency_key, payload_hash)
    except _Expired:
        await conn.execute(
            "UPDATE write_requests SET status = 'expired', updated_at = now() WHERE id = $1 AND status = 'pending'",
            write_request_id,
        )
        raise RequestExpired("The write request expired before it was decided; nothing was written.") from None


async def _decide(
    conn: asyncpg.Connection, user_id: UUID, request_id: UUID, decision: str, key: str, echoed_hash: str | None
) -> WriteDecisionResult:
    request = await conn.fetchrow(
        f"SELECT *, {PAYLOAD_HASH_SQL.format('payload')} = payload_hash AS hash_intact,"
        " expires_at < now() AS past_expiry"
        " FROM write_requests WHERE id = $1 AND user_id = $2 FOR UPDATE",
        request_id,
        user_id,
    )
    if request is None:
        raise NotFound("No such write request.", field="write_request_id")
    taken = await conn.fetchrow(
        "SELECT decision, idempotency_key FROM operation_confirmations WHERE user_id = $1 AND write_request_id = $2",
        user_id,
        request_id,
    )
    if taken is not None:
        if taken["idempotency_key"] == key and taken["decision"] == decision:
            return _result(request)
        raise AlreadyDecided(f"This write request was already {taken['decision']}.", field="decision")
    if request["status"] == "expired" or request["past_expiry"]:
        raise _Expired()
    if echoed_hash is not None and echoed_hash != request["payload_hash"]:
        raise PayloadChanged("The payload_hash does not match the stored request.", field="payload_hash")
    if not request["hash_intact"]:
        raise PayloadChanged(
            "The stored payload no longer matches its hash; refusing to apply it.", field="payload_hash"
        )
    await conn.execute(
        "INSERT INTO operation_confirmations (user_id, write_request_id, decision, idempotency_key)"
        " VALUES ($1, $2, $3, $4)",
        user_id,
        request_id,
        decision,
        key,
    )
    target_id = request["target_id"]
    if decision == "confirmed":
        target_id = await table_writes.apply(conn, user_id, request)
    status = "applied" if decision == "confirmed" else "rejected"
    updated = await conn.fetchrow(
        "UPDATE write_requests SET status = $2, target_id = $3, updated_at = now() WHERE id = $1 RETURNING *",
        request_id,
        status,
        target_id,
    )
    return _result(updated)


def _result(request: asyncpg.Record) -> WriteDecisionResult:
    status = request["status"]
    applied_id = request["target_id"] if status == "applied" else None
    return WriteDecisionResult(
        write_request_id=request["id"], status=status, applied_target_id=applied_id, message=MESSAGES.get(status)
    )
