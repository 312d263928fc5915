"""The embedded PostgreSQL: data survives a stop/start, and a server killed hard is started again."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import asyncpg

from store.embedded import EmbeddedPostgres


async def _query(dsn: str, sql: str, setup: str = ""):
    conn = await asyncpg.connect(dsn)
    try:
        if setup:
            await conn.execute(setup)
        return await conn.fetchval(sql)
    finally:
        await conn.close()


async def test_data_survives_restart_and_a_stale_pid_file():
    folder = Path(tempfile.mkdtemp(prefix="baton-pg-"))  # reachable by the server's own system user
    server = EmbeddedPostgres(folder / "pgdata")
    dsn = server.start()
    try:
        await _query(dsn, "SELECT 1", setup="CREATE TABLE kept (x int); INSERT INTO kept VALUES (42);")
        server.stop()
        assert await _query(server.start(), "SELECT x FROM kept") == 42

        pid = server.pid
        os.kill(pid, signal.SIGKILL)  # the postmaster dies without removing postmaster.pid
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        assert (folder / "pgdata" / "postmaster.pid").exists()
        dsn = server.start()
        assert server.pid != pid
        assert await _query(dsn, "SELECT x FROM kept") == 42
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def test_a_second_user_of_the_folder_adopts_the_server_and_does_not_stop_it():
    folder = Path(tempfile.mkdtemp(prefix="baton-pg-"))
    owner, adopter = EmbeddedPostgres(folder / "pgdata"), EmbeddedPostgres(folder / "pgdata")
    try:
        dsn = owner.start()
        pid = owner.pid
        assert adopter.start() == dsn and adopter.pid == pid
        adopter.stop()
        assert await _query(dsn, "SELECT 1") == 1  # still up: the adopter did not start it
        owner.stop()
        assert not (folder / "pgdata" / "postmaster.pid").exists()  # the owner did stop it
    finally:
        owner.stop()
        shutil.rmtree(folder, ignore_errors=True)
