"""Whether every Orchestrator replica's pool fits the PostgreSQL server, checked when a replica starts.

Each replica opens up to `database.pool_max` connections, and Serve may run the Orchestrator's `max_replicas` of
them: 16 x 8 = 128 is more than a stock server's 100 `max_connections`, and the replicas past the limit would fail
their turns at the busiest moment, with "too many clients". So a replica refuses to start when the product exceeds
what the server leaves for them: `max_connections` less the connections it reserves (`superuser_reserved_connections`,
and `reserved_connections` from PostgreSQL 16) and `database.connection_margin`."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from config.database import DatabaseConfig
from store.database import UNAVAILABLE
from store.errors import StoreUnavailable

_RESERVED = ("superuser_reserved_connections", "reserved_connections")


@dataclass(frozen=True)
class ServerCapacity:
    max_connections: int
    reserved: int  # what the server keeps for superusers and reserved roles
    margin: int  # database.connection_margin

    @property
    def usable(self) -> int:
        """Connections the Orchestrators' pools may hold together."""
        return self.max_connections - self.reserved - self.margin


class PoolTooLarge(RuntimeError):
    """The Orchestrators' pools together could open more connections than the server accepts."""


async def server_capacity(dsn: str, config: DatabaseConfig) -> ServerCapacity:
    try:
        conn = await asyncpg.connect(dsn, timeout=config.connect_timeout_s)
        try:
            rows = await conn.fetch(
                "SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[])", ["max_connections", *_RESERVED]
            )
        finally:
            await conn.close()
    except UNAVAILABLE as exc:
        raise StoreUnavailable(f"The database is unavailable ({type(exc).__name__}).") from exc
    settings = {row["name"]: int(row["setting"]) for row in rows}
    return ServerCapacity(
        max_connections=settings["max_connections"],
        reserved=sum(settings.get(name, 0) for name in _RESERVED),
        margin=config.connection_margin,
    )


def check_pool(capacity: ServerCapacity, *, pool_max: int, replicas: int) -> None:
    """Raise PoolTooLarge, naming both figures and the settings to change, when the pools do not fit."""
    need = pool_max * replicas
    if need <= capacity.usable:
        return
    raise PoolTooLarge(
        f"database.pool_max {pool_max} x {replicas} Orchestrator replicas (its max_replicas in the Serve config) = "
        f"{need} connections, more than the {capacity.usable} this PostgreSQL server leaves them (max_connections "
        f"{capacity.max_connections} - {capacity.reserved} reserved (superuser_reserved_connections, "
        f"reserved_connections) - database.connection_margin {capacity.margin}). Lower database.pool_max (the Serve "
        f"config's args.overrides) or the Orchestrator's max_replicas, or raise max_connections on the server (or "
        "put PgBouncer in front of it); docs/deployment.md, 'Sizing the database pools'."
    )


async def ensure_pool_fits(dsn: str, config: DatabaseConfig, *, replicas: int) -> ServerCapacity:
    """The server's capacity, once the check passed for `replicas` Orchestrator replicas of `config.pool_max`."""
    capacity = await server_capacity(dsn, config)
    check_pool(capacity, pool_max=config.pool_max, replicas=replicas)
    return capacity
