"""A confirmed write applied to its business table (task items, long goals, with optimistic version checks) or to
the user's profile; the write gate (store.write_gate) calls it inside the decision's transaction."""

from __future__ import annotations

from typing import cast
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from protocol.rest import LongGoalPayload, ProfilePayload, TaskItemPayload
from store import appliers
from store.appliers import validated
from store.calendars import imports as calendar_imports
from store.errors import NotFound, StaleVersion


class _Table:
    """A versioned, soft-deleted business table the gate can create, update and delete rows of."""

    def __init__(self, name: str, payload: type[BaseModel]) -> None:
        self.name = name
        self.payload = payload
        self.fields = tuple(payload.model_fields)


TABLES = {"task_item": _Table("task_items", TaskItemPayload), "long_goal": _Table("long_goals", LongGoalPayload)}


async def current_row(
    conn: asyncpg.Connection, table: _Table, user_id: UUID, target_id: UUID | None, *, lock: bool
) -> asyncpg.Record:
    row = await conn.fetchrow(
        f"SELECT * FROM {table.name} WHERE id = $1 AND user_id = $2 AND NOT is_deleted{' FOR UPDATE' if lock else ''}",
        target_id,
        user_id,
    )
    if row is None:
        raise NotFound(f"No such {table.name[:-1]}.", field="target_id")
    return row


def _check_version(request: asyncpg.Record, current_version: int) -> None:
    if request["base_version"] is not None and request["base_version"] != current_version:
        raise StaleVersion(
            f"The target is at version {current_version}, not {request['base_version']}; review and retry.",
            field="base_version",
        )


async def apply(conn: asyncpg.Connection, user_id: UUID, request: asyncpg.Record) -> UUID:
    action, target = request["action"], request["target_type"]
    if (action, target) in appliers.AGENT_WRITES:
        return await appliers.apply(conn, user_id, request)
    if target == "profile":
        return await _apply_profile(conn, user_id, request)
    if (action, target) == (calendar_imports.ACTION, calendar_imports.TARGET):
        return await calendar_imports.apply(conn, user_id, request)
    table = TABLES[target]
    if action == "create":
        values = validated(table.payload, request["payload"]).model_dump()
        columns = list(values)
        try:
            return cast(
                UUID,
                await conn.fetchval(
                    f"INSERT INTO {table.name} (user_id, {', '.join(columns)})"
                    f" VALUES ($1, {', '.join(f'${i + 2}' for i in range(len(columns)))})"
                    " RETURNING id",
                    user_id,
                    *values.values(),
                ),
            )
        except asyncpg.ForeignKeyViolationError as exc:
            raise NotFound("The long goal this item belongs to does not exist.", field="payload.long_goal_id") from exc
    current = await current_row(conn, table, user_id, request["target_id"], lock=True)
    _check_version(request, current["version"])
    if action == "delete":
        await conn.execute(
            f"UPDATE {table.name} SET is_deleted = true, deleted_at = now(), version = version + 1,"
            " updated_at = now() WHERE id = $1 AND version = $2",
            current["id"],
            current["version"],
        )
        return cast(UUID, current["id"])
    merged = validated(table.payload, {**{f: current[f] for f in table.fields}, **request["payload"]}).model_dump()
    assignments = ", ".join(f"{column} = ${i + 3}" for i, column in enumerate(merged))
    result = await conn.execute(
        f"UPDATE {table.name} SET {assignments}, version = version + 1, updated_at = now()"
        " WHERE id = $1 AND version = $2",
        current["id"],
        current["version"],
        *merged.values(),
    )
    if not result.endswith(" 1"):
        raise StaleVersion("The target changed while the write was applied; review and retry.", field="base_version")
    return cast(UUID, current["id"])


async def _apply_profile(conn: asyncpg.Connection, user_id: UUID, request: asyncpg.Record) -> UUID:
    values = validated(ProfilePayload, request["payload"]).model_dump()
    current = await conn.fetchrow("SELECT id, version FROM user_profiles WHERE user_id = $1 FOR UPDATE", user_id)
    if current is None:
        if request["base_version"] is not None:
            raise StaleVersion("The profile does not exist yet; create it without base_version.", field="base_version")
        return cast(
            UUID,
            await conn.fetchval(
                "INSERT INTO user_profiles (user_id, profile_data) VALUES ($1, $2) RETURNING id",
                user_id,
                values["profile_data"],
            ),
        )
    _check_version(request, current["version"])
    await conn.execute(
        "UPDATE user_profiles SET profile_data = $2, version = version + 1, updated_at = now() WHERE id = $1",
        current["id"],
        values["profile_data"],
    )
    return cast(UUID, current["id"])
