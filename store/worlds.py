"""Each user's simulated world (car and order book) in PostgreSQL: brought along by the session lease, saved with
its commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from engine.plugins import World
from store.database import Database
from store.errors import SessionBusy


class WorldChanged(SessionBusy):
    """Another turn of the same user changed the world since this turn read it; nothing of this turn was saved."""

    code = "world_busy"


@dataclass
class Versioned:
    world: World
    version: int  # 0: no row yet


def leased(state: dict[str, Any] | None, version: int) -> Versioned:
    """The world a session lease returned with the lease (store.sessions.acquire)."""
    return Versioned(World.model_validate(state), version) if state is not None else Versioned(World(), 0)


async def load(db: Database, user_id: UUID) -> Versioned:
    async with db.connection() as conn:
        row = await conn.fetchrow("SELECT state, version FROM plugin_state WHERE user_id = $1", user_id)
    return Versioned(World.model_validate(row["state"]), row["version"]) if row else Versioned(World(), 0)


async def save(conn: asyncpg.Connection, user_id: UUID, loaded: Versioned) -> None:
    """Write the world inside the caller's transaction; WorldChanged when another turn saved it first."""
    state = loaded.world.model_dump(mode="json")
    if loaded.version == 0:
        saved = await conn.fetchval(
            "INSERT INTO plugin_state (user_id, state, version) VALUES ($1, $2, 1)"
            " ON CONFLICT (user_id) DO NOTHING RETURNING version",
            user_id,
            state,
        )
    else:
        saved = await conn.fetchval(
            "UPDATE plugin_state SET state = $2, version = version + 1, updated_at = now()"
            " WHERE user_id = $1 AND version = $3 RETURNING version",
            user_id,
            state,
            loaded.version,
        )
    if saved is None:
        raise WorldChanged("Another turn changed this user's car or orders at the same time; nothing was saved, retry.")
