"""The asyncpg pool of one process and the translation of connection failures into StoreUnavailable."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from config.database import DatabaseConfig
from engine.errors import Overloaded
from store.errors import StoreUnavailable
from store.migrate import migrate

# Failures that mean "the database is not there right now", as opposed to a bad statement (a bug) or a
# constraint violation (a conflict the caller handles).
UNAVAILABLE = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
)


async def _no_session_state(conn: asyncpg.Connection) -> None:
    """Returning a connection to the pool: Baton sets no session state on pooled connections (no SET, LISTEN,
    cursors or session advisory locks), so the default reset query would be a wasted round trip per use."""


async def _init_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(
            name, encoder=lambda v: json.dumps(v, ensure_ascii=False), decoder=json.loads, schema="pg_catalog"
        )


class Database:
    """One pool per process (an orchestrator replica, or a test); every use goes through
    `connection()`/`transaction()`."""

    def __init__(self, pool: asyncpg.Pool, config: DatabaseConfig) -> None:
        self.pool = pool
        self.config = config

    @classmethod
    async def open(cls, dsn: str, config: DatabaseConfig, *, run_migrations: bool = True) -> Database:
        """Connect (raising StoreUnavailable if the server is not there) and bring the schema up to date."""
        try:
            if run_migrations:
                conn = await asyncpg.connect(dsn, timeout=config.connect_timeout_s)
                try:
                    await migrate(conn, config.schema_name)
                finally:
                    await conn.close()
            pool = await asyncpg.create_pool(
                dsn,
                min_size=config.pool_min,
                max_size=config.pool_max,
                timeout=config.connect_timeout_s,
                command_timeout=config.command_timeout_s,
                init=_init_connection,
                reset=_no_session_state,
                server_settings={"search_path": config.schema_name, "timezone": "UTC"},
            )
        except UNAVAILABLE as exc:
            raise StoreUnavailable(f"The database is unavailable ({type(exc).__name__}).") from exc
        return cls(pool, config)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        try:
            conn = await self.pool.acquire(timeout=self.config.pool_acquire_timeout_s)
        except TimeoutError as exc:
            # every connection is busy: back-pressure, answered like any other shed turn
            raise Overloaded("Every database connection of this replica is busy; retry shortly.") from exc
        except UNAVAILABLE as exc:
            raise StoreUnavailable(f"The database is unavailable ({type(exc).__name__}); nothing was written.") from exc
        try:
            yield conn
        except UNAVAILABLE as exc:
            raise StoreUnavailable(f"The database is unavailable ({type(exc).__name__}); nothing was written.") from exc
        finally:
            await self.pool.release(conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[asyncpg.Connection]:
        async with self.connection() as conn:
            async with conn.transaction():
                yield conn

    async def close(self) -> None:
        await self.pool.close()
