"""An import of calendar events goes through the write gate: the parsed occurrences are the payload of one write
request (action `import`, target `calendar_source`) whose preview says how many events and the date range; the
confirmation (store.write_gate.decide) replaces the source's entries by key in the same transaction."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from engine.calendars.model import CalendarEvent
from protocol.calendar import ImportPreview
from protocol.rest import WriteRequestCreated
from store.calendars import entries, sources
from store.errors import Conflict

PAYLOAD_HASH_SQL = "encode(sha256(convert_to({}::text, 'UTF8')), 'hex')"  # as store.write_gate computes it
ACTION, TARGET = "import", "calendar_source"


def preview(events: list[CalendarEvent]) -> ImportPreview:
    times = [t for e in events if (t := e.start_at or e.due_at) is not None]
    return ImportPreview(
        events=len(events),
        deadlines=sum(1 for e in events if e.kind == "deadline"),
        first_at=min(times, default=None),
        last_at=max(times, default=None),
    )


def preview_text(name: str, summary: ImportPreview) -> str:
    span = (
        f"，{summary.first_at:%Y-%m-%d} 至 {summary.last_at:%Y-%m-%d}"
        if summary.first_at is not None and summary.last_at is not None
        else ""
    )
    return f"导入日历「{name}」：{summary.events} 个日程（其中截止事项 {summary.deadlines} 个）{span}。"


async def request(
    conn: asyncpg.Connection,
    user_id: UUID,
    *,
    name: str,
    kind: str,
    url: str | None,
    events: list[CalendarEvent],
    ttl_s: int,
    now: datetime,
) -> tuple[WriteRequestCreated, ImportPreview]:
    """A pending import of `events` into the source `name` (made on confirmation when it does not exist yet)."""
    existing = await sources.by_name(conn, user_id, name)
    if existing is not None and existing.kind != kind:
        raise Conflict(f"The calendar '{name}' is a {existing.kind} source, not {kind}.", field="name")
    summary = preview(events)
    payload: dict[str, Any] = {
        "source": {"name": name, "kind": kind, "url": url},
        "events": [e.as_json() for e in events],
    }
    row = await conn.fetchrow(
        "INSERT INTO write_requests (user_id, action, target_type, target_id, payload, payload_hash, preview_text,"
        f" idempotency_key, expires_at) VALUES ($1, $2, $3, $4, $5::jsonb, {PAYLOAD_HASH_SQL.format('$5::jsonb')},"
        " $6, $7, $8) RETURNING id, payload_hash, expires_at",
        user_id,
        ACTION,
        TARGET,
        existing.id if existing else None,
        payload,
        preview_text(name, summary),
        f"srv-{uuid.uuid4().hex}",
        now + timedelta(seconds=ttl_s),
    )
    created = WriteRequestCreated(
        write_request_id=row["id"],
        payload_hash=row["payload_hash"],
        confirmation_payload={
            "write_request_id": str(row["id"]),
            "action": ACTION,
            "target_type": TARGET,
            "target_id": str(existing.id) if existing else None,
            "payload_hash": row["payload_hash"],
            "preview_text": preview_text(name, summary),
            "preview": summary.model_dump(mode="json"),
            "expires_at": row["expires_at"].isoformat(),
        },
    )
    return created, summary


async def apply(conn: asyncpg.Connection, user_id: UUID, request: asyncpg.Record) -> UUID:
    """The confirmed import: the source (made if new), its entries replaced by key. Returns the source's id."""
    payload = request["payload"]
    spec = payload["source"]
    source = await sources.by_name(conn, user_id, spec["name"])
    if source is None:
        source = await sources.create(conn, user_id, kind=spec["kind"], name=spec["name"], url=spec["url"])
    events = [CalendarEvent.from_json(e) for e in payload["events"]]
    await entries.replace(conn, user_id, source.id, events)
    await sources.synced(conn, source.id, sync_token=None)
    return source.id


async def refresh(
    conn: asyncpg.Connection, user_id: UUID, source_id: UUID, events: list[CalendarEvent]
) -> entries.Replaced:
    """A feed URL the user subscribed to (its first import confirmed), fetched again: applied without asking."""
    async with conn.transaction():
        await sources.get(conn, user_id, source_id, lock=True)
        replaced = await entries.replace(conn, user_id, source_id, events)
        await sources.synced(conn, source_id, sync_token=None)
    return replaced
