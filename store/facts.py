"""The reads the main agent's execution stage makes for its sub-agents, always scoped to one user.

They return protocol.agents models: the candidate items of a time range, the feedback given on them, the newest
feedback per item and the user's profile data. Ranges are [start_at, end_at).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from protocol.agents import CandidateItem, FeedbackFact

_CANDIDATE = "id, title, item_type, start_at, end_at, due_at, status, version, long_goal_id"
_FEEDBACK = "f.id, f.task_item_id, f.feedback_status, f.normalized_feedback, f.duration_minutes, f.occurred_at"


def _touches_range(t: str) -> str:
    """An item of alias `t` touches [$2, $3): its start..end overlaps it, or, unscheduled, its due time lies in it.

    The same rule as store.business.timeline, so the agents see the items the timeline shows."""
    return (
        f"(({t}.start_at IS NOT NULL AND {t}.start_at < $3 AND coalesce({t}.end_at, {t}.start_at) >= $2)"
        f" OR ({t}.start_at IS NULL AND {t}.due_at >= $2 AND {t}.due_at < $3))"
    )


async def items_in_range(
    conn: asyncpg.Connection,
    user_id: UUID,
    *,
    start_at: datetime,
    end_at: datetime,
    item_types: tuple[str, ...] | None = None,
    statuses: tuple[str, ...] | None = None,
) -> list[CandidateItem]:
    """The user's items (not deleted) touching the range, in time order; `item_types` / `statuses` narrow them when
    given (None: any)."""
    rows = await conn.fetch(
        f"SELECT {_CANDIDATE} FROM task_items t WHERE user_id = $1 AND NOT is_deleted AND {_touches_range('t')}"
        " AND ($4::text[] IS NULL OR item_type = ANY($4)) AND ($5::text[] IS NULL OR status = ANY($5))"
        " ORDER BY coalesce(start_at, due_at), created_at",
        user_id,
        start_at,
        end_at,
        None if item_types is None else list(item_types),
        None if statuses is None else list(statuses),
    )
    return [CandidateItem.model_validate(dict(r)) for r in rows]


async def feedbacks_in_range(
    conn: asyncpg.Connection, user_id: UUID, *, start_at: datetime, end_at: datetime
) -> list[FeedbackFact]:
    """The user's feedback (not deleted) that occurred in the range, or that was given on an item (not deleted)
    touching the range, oldest first; each with its item's title and whether that item has left the range since."""
    rows = await conn.fetch(
        f"SELECT {_FEEDBACK}, t.title AS item_title,"
        f" NOT (NOT t.is_deleted AND {_touches_range('t')}) AS item_left_range FROM feedback_records f"
        " JOIN task_items t ON t.user_id = f.user_id AND t.id = f.task_item_id"
        " WHERE f.user_id = $1 AND NOT f.is_deleted"
        f" AND ((f.occurred_at >= $2 AND f.occurred_at < $3) OR (NOT t.is_deleted AND {_touches_range('t')}))"
        " ORDER BY f.occurred_at, f.created_at",
        user_id,
        start_at,
        end_at,
    )
    return [FeedbackFact.model_validate(dict(r)) for r in rows]


async def latest_feedbacks(conn: asyncpg.Connection, user_id: UUID, item_ids: list[UUID]) -> dict[UUID, FeedbackFact]:
    """The newest feedback (by occurred_at, then creation) on each of the user's items; items without any are absent."""
    if not item_ids:
        return {}
    rows = await conn.fetch(
        f"SELECT DISTINCT ON (f.task_item_id) {_FEEDBACK} FROM feedback_records f"
        " WHERE f.user_id = $1 AND f.task_item_id = ANY($2::uuid[]) AND NOT f.is_deleted"
        " ORDER BY f.task_item_id, f.occurred_at DESC, f.created_at DESC",
        user_id,
        item_ids,
    )
    return {r["task_item_id"]: FeedbackFact.model_validate(dict(r)) for r in rows}


async def profile_data(conn: asyncpg.Connection, user_id: UUID) -> dict[str, Any]:
    """The user's profile_data; {} before a profile was written."""
    data = await conn.fetchval("SELECT profile_data FROM user_profiles WHERE user_id = $1 AND NOT is_deleted", user_id)
    return data if data is not None else {}
