"""Versioned SQL migrations applied at start-up, idempotently, under a PostgreSQL advisory lock."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from store.errors import MigrationError

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# One lock id for every Baton replica: the second replica to start waits, then finds nothing left to apply.
ADVISORY_LOCK_ID = int.from_bytes(b"baton-mg", "big") & 0x7FFF_FFFF_FFFF_FFFF
_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def load_migrations(folder: Path = MIGRATIONS_DIR) -> list[Migration]:
    migrations = []
    for path in sorted(folder.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if match is None:
            raise MigrationError(f"Migration file name '{path.name}' is not NNNN_name.sql")
        migrations.append(Migration(int(match.group(1)), match.group(2), path.read_text(encoding="utf-8")))
    versions = [m.version for m in migrations]
    if len(set(versions)) != len(versions):
        raise MigrationError("Two migration files share a version number")
    return migrations


async def migrate(conn: asyncpg.Connection, schema: str, migrations: list[Migration] | None = None) -> list[int]:
    """Bring `schema` up to date; returns the versions applied by this call (empty when already current)."""
    migrations = load_migrations() if migrations is None else migrations
    await conn.execute("SELECT pg_advisory_lock($1)", ADVISORY_LOCK_ID)
    try:
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await conn.execute(f'SET search_path TO "{schema}"')
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
            " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        applied = {
            r["version"]: r["checksum"] for r in await conn.fetch("SELECT version, checksum FROM schema_migrations")
        }
        done = []
        for migration in migrations:
            if migration.version in applied:
                if applied[migration.version] != migration.checksum:
                    raise MigrationError(
                        f"Migration {migration.version:04d}_{migration.name} changed after it was applied"
                    )
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            done.append(migration.version)
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ADVISORY_LOCK_ID)
