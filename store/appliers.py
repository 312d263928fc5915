"""The write gate's appliers of the sub-agents' writes (seed 002): a feedback record, a replan, a long-goal split.

Each write has a creation check (the rows its payload names exist and are the user's) and an applier that runs
inside the gate's decide transaction: it locks what it changes, checks versions and raises before anything
commits when it cannot apply all of it, so a refused or failed write leaves no row behind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
from pydantic import BaseModel, ValidationError

from engine.errors import InvalidInput
from protocol.rest import TaskItemPayload, WriteRequestCreate
from protocol.write_payloads import FeedbackPayload, GoalSplitPayload, ReplanPayload
from store.errors import NotFound, StaleVersion

_ITEM_FIELDS = tuple(TaskItemPayload.model_fields)
# the feedback statuses that end the item's open state move the item to the same status
_ITEM_STATUS_AFTER_FEEDBACK = {"completed": "completed", "deferred": "deferred", "cancelled": "cancelled"}


def validated(model: type[BaseModel], data: dict[str, Any], *, where: str = "payload") -> Any:
    """`data` as a `model` instance, or InvalidInput whose field is the first wrong one, under `where`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join([where, *(str(p) for p in first.get("loc", ()))])
        raise InvalidInput(f"{field}: {first.get('msg')}", field=field) from exc


async def _items(conn: asyncpg.Connection, user_id: UUID, ids: list[UUID], *, lock: bool) -> dict[UUID, asyncpg.Record]:
    # ORDER BY id: two writes locking overlapping items take the locks in the same order, so they cannot deadlock
    rows = await conn.fetch(
        "SELECT * FROM task_items WHERE user_id = $1 AND id = ANY($2::uuid[]) AND NOT is_deleted"
        f" ORDER BY id{' FOR UPDATE' if lock else ''}",
        user_id,
        ids,
    )
    return {row["id"]: row for row in rows}


async def _item(conn: asyncpg.Connection, user_id: UUID, item_id: UUID, *, field: str, lock: bool) -> asyncpg.Record:
    row = (await _items(conn, user_id, [item_id], lock=lock)).get(item_id)
    if row is None:
        raise NotFound("No such task item.", field=field)
    return row


async def _replanned_items(
    conn: asyncpg.Connection, user_id: UUID, payload: ReplanPayload, *, lock: bool
) -> dict[UUID, asyncpg.Record]:
    items = await _items(conn, user_id, [c.task_item_id for c in payload.changes], lock=lock)
    for i, change in enumerate(payload.changes):
        if change.task_item_id not in items:
            raise NotFound("No such task item.", field=f"payload.changes.{i}.task_item_id")
    return items


async def _check_feedback(
    conn: asyncpg.Connection, user_id: UUID, payload: FeedbackPayload, source_message_id: UUID | None
) -> None:
    await _item(conn, user_id, payload.task_item_id, field="payload.task_item_id", lock=False)


async def _apply_feedback(
    conn: asyncpg.Connection, user_id: UUID, payload: FeedbackPayload, source_message_id: UUID | None
) -> UUID:
    """Insert the feedback record (its id is the applied target) and move the item's status when the feedback ends
    it."""
    item = await _item(conn, user_id, payload.task_item_id, field="payload.task_item_id", lock=True)
    if item["version"] != payload.item_version:
        raise StaleVersion(
            f"The task item is at version {item['version']}, not {payload.item_version}; review and retry.",
            field="payload.item_version",
        )
    feedback_id: UUID = await conn.fetchval(
        "INSERT INTO feedback_records (user_id, task_item_id, source_message_id, feedback_status, normalized_feedback,"
        " duration_minutes, occurred_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        user_id,
        item["id"],
        source_message_id,
        payload.feedback_status,
        payload.normalized_feedback,
        payload.duration_minutes,
        payload.occurred_at,
    )
    status = _ITEM_STATUS_AFTER_FEEDBACK.get(payload.feedback_status)
    if status is not None:
        await conn.execute(
            "UPDATE task_items SET status = $2, version = version + 1, updated_at = now() WHERE id = $1",
            item["id"],
            status,
        )
    return feedback_id


async def _check_replan(
    conn: asyncpg.Connection, user_id: UUID, payload: ReplanPayload, source_message_id: UUID | None
) -> None:
    await _replanned_items(conn, user_id, payload, lock=False)


async def _apply_replan(
    conn: asyncpg.Connection, user_id: UUID, payload: ReplanPayload, source_message_id: UUID | None
) -> UUID:
    """Apply every change or none: all versions are checked before the first row changes. The applied target is the
    first change's item."""
    items = await _replanned_items(conn, user_id, payload, lock=True)
    for i, change in enumerate(payload.changes):
        version = items[change.task_item_id]["version"]
        if version != change.base_version:
            raise StaleVersion(
                f"Task item {change.task_item_id} is at version {version}, not {change.base_version};"
                " nothing was replanned.",
                field=f"payload.changes.{i}.base_version",
            )
    for i, change in enumerate(payload.changes):
        current = items[change.task_item_id]
        columns = sorted(change.model_fields_set - {"task_item_id", "base_version"})
        # the whole row after the change must still be a valid item (e.g. a new end_at before the kept start_at)
        merged = validated(
            TaskItemPayload,
            {**{f: current[f] for f in _ITEM_FIELDS}, **change.model_dump(include=set(columns))},
            where=f"payload.changes.{i}",
        )
        assignments = ", ".join(f"{column} = ${n + 2}" for n, column in enumerate(columns))
        # the row is locked since _replanned_items, so its version cannot have moved since the check above
        await conn.execute(
            f"UPDATE task_items SET {assignments}, version = version + 1, updated_at = now() WHERE id = $1",
            current["id"],
            *(getattr(merged, column) for column in columns),
        )
    return payload.changes[0].task_item_id


async def _check_goal_split(
    conn: asyncpg.Connection, user_id: UUID, payload: GoalSplitPayload, source_message_id: UUID | None
) -> None:
    if source_message_id is None:
        raise InvalidInput(
            "A goal split records its task profile against the message it came from; source_message_id is missing.",
            field="source_message_id",
        )


async def _apply_goal_split(
    conn: asyncpg.Connection, user_id: UUID, payload: GoalSplitPayload, source_message_id: UUID | None
) -> UUID:
    """Insert the goal (the applied target), its subtasks and its task profile snapshot."""
    if source_message_id is None:  # the write request's message link is ON DELETE SET NULL; the snapshot's is NOT NULL
        raise NotFound("The message this goal split came from no longer exists.", field="source_message_id")
    goal = payload.goal.model_dump()
    goal_id: UUID = await conn.fetchval(
        f"INSERT INTO long_goals (user_id, {', '.join(goal)})"
        f" VALUES ($1, {', '.join(f'${i + 2}' for i in range(len(goal)))})"
        " RETURNING id",
        user_id,
        *goal.values(),
    )
    if payload.subtasks:
        await conn.executemany(
            "INSERT INTO task_items (user_id, long_goal_id, item_type, title, description, start_at, end_at, due_at)"
            " VALUES ($1, $2, 'subtask', $3, $4, $5, $6, $7)",
            [(user_id, goal_id, s.title, s.description, s.start_at, s.end_at, s.due_at) for s in payload.subtasks],
        )
    await conn.execute(
        "INSERT INTO task_profile_snapshots (user_id, long_goal_id, profile_summary, source_message_id)"
        " VALUES ($1, $2, $3, $4)",
        user_id,
        goal_id,
        payload.task_profile_summary,
        source_message_id,
    )
    return goal_id


@dataclass(frozen=True)
class _AgentWrite:
    payload: type[BaseModel]
    check: Callable[[asyncpg.Connection, UUID, Any, UUID | None], Awaitable[None]]
    apply: Callable[[asyncpg.Connection, UUID, Any, UUID | None], Awaitable[UUID]]


AGENT_WRITES = {
    ("feedback", "feedback"): _AgentWrite(FeedbackPayload, _check_feedback, _apply_feedback),
    ("replan", "task_item"): _AgentWrite(ReplanPayload, _check_replan, _apply_replan),
    ("goal_split", "long_goal"): _AgentWrite(GoalSplitPayload, _check_goal_split, _apply_goal_split),
}


def check_body(body: WriteRequestCreate) -> None:
    """Refuse a sub-agent write whose payload is invalid, or which carries target_id / base_version: these writes
    name their rows and versions in the payload, and a second, ignored place for them would mislead."""
    if body.target_id is not None or body.base_version is not None:
        raise InvalidInput(
            f"A '{body.action}' names its rows and versions in the payload, not in target_id / base_version.",
            field="target_id" if body.target_id is not None else "base_version",
        )
    validated(AGENT_WRITES[(body.action, body.target_type)].payload, body.payload)


async def check(
    conn: asyncpg.Connection, user_id: UUID, body: WriteRequestCreate, source_message_id: UUID | None
) -> None:
    """At creation: refuse a sub-agent write naming rows that are not the user's (NotFound names the payload field)."""
    write = AGENT_WRITES[(body.action, body.target_type)]
    await write.check(conn, user_id, validated(write.payload, body.payload), source_message_id)


async def apply(conn: asyncpg.Connection, user_id: UUID, request: asyncpg.Record) -> UUID:
    """Inside the decide transaction: apply a stored sub-agent write; returns the applied target's id."""
    write = AGENT_WRITES[(request["action"], request["target_type"])]
    return await write.apply(conn, user_id, validated(write.payload, request["payload"]), request["source_message_id"])
