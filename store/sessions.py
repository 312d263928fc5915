"""Turn-state sessions in PostgreSQL: a short lease per running turn plus an optimistic version on every save.

A turn leases its session row before it runs and commits the new state (version + 1, lease cleared) in the
same transaction that logs the turn; a second turn on that session waits for the lease, then gives up with
`session_busy`. So two replicas never run one conversation's turns at once, and a plugin never runs twice.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from config.database import DatabaseConfig
from engine.session import StaleSession
from protocol.store import ConversationMessageDTO
from store.database import Database
from store.errors import SessionBusy


class LeaseWaits:
    """This process's turns waiting for a busy session, woken the moment a turn of this process ends that session's
    lease (`ended`); a lease held by another replica is found free by the waiter's next check, after a backoff."""

    def __init__(self) -> None:
        self._events: dict[tuple[UUID, str], tuple[asyncio.Event, int]] = {}

    async def wait(self, user_id: UUID, session_id: str, timeout_s: float) -> None:
        key = (user_id, session_id)
        event, waiting = self._events.get(key) or (asyncio.Event(), 0)
        self._events[key] = (event, waiting + 1)
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            pass
        finally:
            current = self._events.get(key)
            if current is not None and current[0] is event:
                if current[1] <= 1:
                    del self._events[key]
                else:
                    self._events[key] = (event, current[1] - 1)

    def ended(self, user_id: UUID, session_id: str) -> None:
        found = self._events.pop((user_id, session_id), None)
        if found is not None:
            found[0].set()

    def __len__(self) -> int:
        return len(self._events)


@dataclass(frozen=True)
class SessionLease:
    session_id: str
    user_id: UUID
    token: UUID
    state: dict[str, Any] | None  # None: a new session, or one idle past its time to live
    version: int
    question: ConversationMessageDTO | None = None  # the session's open clarification question, if any
    # the user's world as the lease found it (None: no row yet) and its version (0: none), parsed only by a turn that
    # runs a plugin; store.worlds.leased reads it
    world: dict[str, Any] | None = None
    world_version: int = 0


async def acquire(
    db: Database,
    session_id: str,
    user_id: UUID,
    *,
    ttl_s: float,
    create: bool = True,
    wait_until: float | None = None,
    token: UUID | None = None,
    waits: LeaseWaits | None = None,
) -> SessionLease | None:
    """Lease the session for one turn, waiting up to `session_busy_wait_ms` — and never past `wait_until`
    (epoch seconds: the turn's own lease deadline) — for a running turn to finish. The same statement expires
    the user's stale clarification questions and returns the session's open one (`SessionLease.question`).

    A session is the user's own: the same id of another user is another session. While the session is busy the
    wait holds no connection: it sleeps `session_busy_poll_ms`, doubled after each check up to
    `session_busy_poll_max_ms`, and `waits` wakes it at once when a turn of this process ends the lease.

    Returns None when `create` is False and no such session exists. Raises SessionBusy when the wait runs out.
    `token` (default: a new one) names the lease, so a caller that gave up waiting for this call can still
    `release_token` what it may have leased.

    The statement also returns the user's world (`SessionLease.world`), and commits without waiting for the WAL
    flush (migration 0008 says why), so it must not run inside a caller's transaction: it has its own connection.
    """
    config: DatabaseConfig = db.config
    token = token or uuid.uuid4()
    give_up = time.time() + config.session_busy_wait_ms / 1000.0
    if wait_until is not None:
        give_up = min(give_up, wait_until)
    pause = config.session_busy_poll_ms / 1000.0
    while True:
        # one statement: stale questions expired, the session leased, its state, open question and the user's world
        # returned
        async with db.connection() as conn:
            row = await conn.fetchrow(
                "SELECT * FROM baton_begin_turn($1, $2, $3, $4, $5, $6)",
                session_id,
                user_id,
                token,
                float(config.session_lease_s),
                float(ttl_s),
                create,
            )
        if row["leased"]:
            question = ConversationMessageDTO.model_validate(row["question"]) if row["question"] else None
            return SessionLease(
                session_id,
                user_id,
                token,
                None if row["fresh"] else row["state"],
                row["version"],
                question,
                row["world"],
                row["world_version"],
            )
        owner = row["owner"]
        if owner is None and not create:
            return None
        left = give_up - time.time()
        if left <= 0:
            raise SessionBusy(
                f"Another turn of session '{session_id}' is still running; retry shortly.", field="session_id"
            )
        if waits is None:
            await asyncio.sleep(min(pause, left))
        else:
            await waits.wait(user_id, session_id, min(pause, left))
        pause = min(pause * 2.0, config.session_busy_poll_max_ms / 1000.0)


async def commit(conn: asyncpg.Connection, lease: SessionLease, state: dict[str, Any]) -> int:
    """Save the turn's state and end the lease, inside the caller's transaction; returns the new version.

    Raises StaleSession when the lease lapsed and another turn has taken the session since.
    """
    version: int | None = await conn.fetchval(
        "UPDATE sessions SET state = $3, version = version + 1, lease_token = NULL, lease_until = NULL,"
        " updated_at = now()"
        " WHERE user_id = $5 AND id = $1 AND lease_token = $2 AND version = $4 RETURNING version",
        lease.session_id,
        lease.token,
        state,
        lease.version,
        lease.user_id,
    )
    if version is None:
        raise StaleSession(lease.session_id)
    return version


async def release(db: Database, lease: SessionLease) -> None:
    """End the lease without saving (the turn failed); the session keeps its last committed state."""
    await release_token(db, lease.user_id, lease.session_id, lease.token)


async def release_token(db: Database, user_id: UUID, session_id: str, token: UUID) -> None:
    """End the lease named `token`, if the session holds it (a no-op otherwise)."""
    async with db.connection() as conn:
        await conn.execute(
            "UPDATE sessions SET lease_token = NULL, lease_until = NULL"
            " WHERE user_id = $3 AND id = $1 AND lease_token = $2",
            session_id,
            token,
            user_id,
        )
