"""A real PostgreSQL for the session, and a migrated pool per test (no model build: the store tier needs none)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from config.settings import load_settings
from store.database import Database
from tests.support.packs import CONFIG_DIR


@pytest.fixture(scope="session")
def postgres() -> Iterator[dict[str, Any]]:
    """DATABASE_URL when set, else an embedded server in a temp folder. Yields {"dsn", "server"}; "server" is the
    EmbeddedPostgres (None for an external URL) so a test can restart it."""
    if os.environ.get("DATABASE_URL"):
        yield {"dsn": os.environ["DATABASE_URL"], "server": None}
        return
    from store.embedded import EmbeddedPostgres

    # not under pytest's 0700 temp root: the server runs as its own system user and must reach the folder
    folder = Path(tempfile.mkdtemp(prefix="baton-pg-"))
    server = EmbeddedPostgres(folder / "pgdata")
    dsn = server.start()
    try:
        yield {"dsn": dsn, "server": server}
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
async def db(postgres: dict[str, Any]) -> AsyncIterator[Database]:
    """An asyncpg pool on the session's PostgreSQL with the schema migrated, closed after the test."""
    database = await Database.open(postgres["dsn"], load_settings(CONFIG_DIR, {}).database)
    try:
        yield database
    finally:
        await database.close()
