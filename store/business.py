"""Reads of the business tables, always scoped to one user: the item timeline, long goals, the user profile."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import asyncpg

from protocol.store import LongGoalDTO, TaskItemDTO, TaskProfileSnapshot, UserProfileDTO
from store.errors import NotFound

_ITEM = "id, user_id, long_goal_id, item_type, title, description, start_at, end_at, due_at, status, version"
_GOAL = "id, user_id, title, description, plan_overview, start_at, deadline_at, status, version"


async def timeline(
    conn: asyncpg.Connection, user_id: UUID, *, start_at: datetime, end_at: datetime, item_type: str | None
) -> list[TaskItemDTO]:
    """Items whose time (start–end, or the due time of an unscheduled item) touches [start_at, end_at), in time
    order."""
    rows = await conn.fetch(
        f"SELECT {_ITEM} FROM task_items WHERE user_id = $1 AND NOT is_deleted AND ($4::text IS NULL OR item_type = $4)"
        " AND ((start_at IS NOT NULL AND start_at < $3 AND coalesce(end_at, start_at) >= $2)"
        "   OR (start_at IS NULL AND due_at >= $2 AND due_at < $3))"
        " ORDER BY coalesce(start_at, due_at), created_at",
        user_id,
        start_at,
        end_at,
        item_type,
    )
    return [TaskItemDTO.model_validate(dict(r)) for r in rows]


async def goals(conn: asyncpg.Connection, user_id: UUID, *, status: str | None) -> list[LongGoalDTO]:
    rows = await conn.fetch(
        f"SELECT {_GOAL} FROM long_goals WHERE user_id = $1 AND NOT is_deleted AND ($2::text IS NULL OR status = $2)"
        " ORDER BY updated_at DESC",
        user_id,
        status,
    )
    return [LongGoalDTO.model_validate(dict(r)) for r in rows]


async def goal_detail(
    conn: asyncpg.Connection, user_id: UUID, goal_id: UUID
) -> tuple[LongGoalDTO, list[TaskItemDTO], TaskProfileSnapshot | None]:
    goal = await conn.fetchrow(
        f"SELECT {_GOAL} FROM long_goals WHERE id = $1 AND user_id = $2 AND NOT is_deleted", goal_id, user_id
    )
    if goal is None:
        raise NotFound("No such long goal.", field="goal_id")
    subtasks = await conn.fetch(
        f"SELECT {_ITEM} FROM task_items WHERE user_id = $1 AND long_goal_id = $2 AND NOT is_deleted"
        " ORDER BY due_at NULLS LAST, created_at",
        user_id,
        goal_id,
    )
    snapshot = await conn.fetchrow(
        "SELECT id, user_id, long_goal_id, profile_summary, source_message_id, version FROM task_profile_snapshots"
        " WHERE user_id = $1 AND long_goal_id = $2 AND NOT is_deleted",
        user_id,
        goal_id,
    )
    return (
        LongGoalDTO.model_validate(dict(goal)),
        [TaskItemDTO.model_validate(dict(r)) for r in subtasks],
        TaskProfileSnapshot.model_validate(dict(snapshot)) if snapshot else None,
    )


async def profile(conn: asyncpg.Connection, user_id: UUID) -> UserProfileDTO:
    """The user's global profile; an empty one at version 0 before anything was written."""
    row = await conn.fetchrow(
        "SELECT profile_data, version, updated_at FROM user_profiles WHERE user_id = $1 AND NOT is_deleted", user_id
    )
    if row is None:
        return UserProfileDTO(user_id=user_id, profile_data={}, version=0)
    return UserProfileDTO(
        user_id=user_id, profile_data=row["profile_data"], version=row["version"], updated_at=row["updated_at"]
    )
