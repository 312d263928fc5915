"""A real CalDAV server for the tests: Radicale on a free port of 127.0.0.1, its collections in a temp folder, users
from a plain htpasswd file (no login delay). Started once per module that uses it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

USERS = {"alice": "alice-app-password", "bob": "bob-app-password"}


@dataclass(frozen=True)
class Radicale:
    base_url: str
    folder: Path

    def place(self, user: str, name: str, objects: dict[str, str]) -> None:
        """Objects (file name → iCalendar text) put straight into a calendar's folder in Radicale's file storage,
        which it reads as they are: seeding hundreds of objects this way takes milliseconds, where one PUT each
        takes tens of them (Radicale re-reads the collection on every write)."""
        collection = self.folder / "collections" / "collection-root" / user / name
        for file_name, text in objects.items():
            (collection / file_name).write_text(text, encoding="utf-8")

    def calendar_url(self, user: str, name: str) -> str:
        return f"{self.base_url}/{user}/{name}/"

    def make_calendar(self, user: str, name: str) -> str:
        """A new calendar collection of `user`; its URL."""
        from caldav.davclient import DAVClient

        with DAVClient(url=self.base_url + "/", username=user, password=USERS[user]) as client:
            client.principal().make_calendar(name=name, cal_id=name)
        return self.calendar_url(user, name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def radicale(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Radicale]:
    folder: Path = tmp_path_factory.mktemp("radicale")
    (folder / "users").write_text("".join(f"{u}:{p}\n" for u, p in USERS.items()), encoding="utf-8")
    port = free_port()
    (folder / "config").write_text(
        f"[server]\nhosts = 127.0.0.1:{port}\n"
        f"[auth]\ntype = htpasswd\nhtpasswd_filename = {folder / 'users'}\nhtpasswd_encryption = plain\ndelay = 0\n"
        f"[storage]\nfilesystem_folder = {folder / 'collections'}\n"
        "[logging]\nlevel = warning\n",
        encoding="utf-8",
    )
    # Radicale's own CLI, with one privileged setting its config file refuses: no fsync per write (a test's
    # collections are thrown away; a PUT then takes ~1 ms instead of ~100)
    launcher = (
        "import sys; from radicale import config, server; c = config.load([(sys.argv[1], False)]);"
        " c.update({'storage': {'_filesystem_fsync': 'False'}}, 'tests', privileged=True); server.serve(c)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", launcher, str(folder / "config")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "radicale exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "radicale did not start"
                time.sleep(0.05)
        yield Radicale(base_url=f"http://127.0.0.1:{port}", folder=folder)
    finally:
        process.terminate()
        process.wait(timeout=10)
