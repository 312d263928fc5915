"""The embedded PostgreSQL: data survives a stop/start, and a server killed hard is started again."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import asyncpg
import pytest

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


@pytest.mark.store
async def test_the_socket_and_its_folder_are_private_to_the_server():
    """Trust auth on the socket: only its folder's mode keeps other accounts out. A data folder whose path is too
    long for a socket puts it in the package's runtime folder, which the package leaves 0777 when run as root."""
    folder = Path(tempfile.mkdtemp(prefix="baton-pg-"))
    server = EmbeddedPostgres(folder / ("long-" * 20) / "pgdata")
    dsn = server.start()
    try:
        socket_dir = Path(dsn.split("host=", 1)[1])
        assert socket_dir != server.pgdata  # the case where the package made the folder
        assert oct(socket_dir.stat().st_mode & 0o777) == oct(0o700)
        socket = next(socket_dir.glob(".s.PGSQL.*[0-9]"))
        assert socket.stat().st_mode & 0o077 == 0
        assert await _query(dsn, "SELECT 1") == 1  # the server's own clients still connect
        assert await _query(dsn, "SHOW unix_socket_permissions") == "0700"
        server.stop()
        assert await _query(server.start(), "SELECT 2") == 2  # and a restart finds its folder usable
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
