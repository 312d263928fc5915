"""`python -m serve_app.ops.reaper`: what stops a run's processes when its launcher cannot.

A stop signal sent to a whole process group (Ctrl-C in a terminal, systemd's `KillMode=control-group`, a
cancelled CI job) also reaches Ray's raylet, and when the raylet dies Ray ends the driver — the launcher —
before its own clean-up runs; a launcher killed outright runs none. So the launcher starts this reaper in a
session of its own, and the reaper, once the launcher is gone, stops what that run left: processes whose
command line names the run's Ray session folder or HAProxy folder (by PID: TERM, then KILL), the
embedded PostgreSQL the launcher started (a fast shutdown), and the run's private HAProxy folder. Everything
here is known by its path or PID.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from store.embedded import EmbeddedPostgres, process_alive

POLL_S = 0.2
TERM_GRACE_S = 3.0


def pids_naming(markers: list[str], *, exclude: int) -> list[int]:
    """PIDs of processes whose command line contains one of `markers` (paths unique to one run)."""
    wanted = [m.encode() for m in markers if m]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == exclude:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(m in cmdline for m in wanted):
            found.append(int(entry.name))
    return found


def terminate(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    give_up = time.monotonic() + TERM_GRACE_S
    while any(process_alive(p) for p in pids) and time.monotonic() < give_up:
        time.sleep(POLL_S)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_postgres(pgdata: Path) -> None:
    EmbeddedPostgres(pgdata).stop_running()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve_app.ops.reaper", description=__doc__.splitlines()[0])
    parser.add_argument("--launcher", type=int, required=True, help="PID to wait for")
    parser.add_argument("--marker", action="append", default=[], help="a path naming this run's processes")
    parser.add_argument(
        "--session-file",
        type=Path,
        default=None,
        help="a file the launcher writes the Ray session folder into once Ray runs",
    )
    parser.add_argument("--pgdata", type=Path, default=None, help="the embedded PostgreSQL the launcher started")
    parser.add_argument(
        "--remove", type=Path, action="append", default=[], help="a private folder of the run to delete at the end"
    )
    args = parser.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # it outlives the launcher on purpose
    while process_alive(args.launcher):
        time.sleep(POLL_S)
    markers = list(args.marker)
    if args.session_file is not None and args.session_file.exists():
        markers.append(args.session_file.read_text(encoding="utf-8").strip())
        args.session_file.unlink(missing_ok=True)
    for _ in range(3):  # a worker may still spawn a child while its parent is being stopped
        leftovers = pids_naming(markers, exclude=os.getpid())
        if not leftovers:
            break
        terminate(leftovers)
    if args.pgdata is not None:
        stop_postgres(args.pgdata)
    for folder in args.remove:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
