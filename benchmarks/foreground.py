"""One system in the foreground: while one system is measured, every other system the run started is lowered
to the least CPU priority (nice 19), so each is measured on the same machine with the same background.

All systems stay started and warm (the run interleaves them), but an idle Baton is not idle to the CPU: its Serve
controller, GCS, raylet, metrics pushes and model replicas took about a quarter of one core here, so the system
measured behind two idle Batons and a monolith paid for their housekeeping. At nice 19 the others get CPU only when
the measured one leaves it (Linux CFS: weight 15 against 1024), and their timers still run, so nothing times out.
Niceness is per thread on Linux: every thread of every process of a system's process tree is set.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

BACKGROUND_NICE = 19
PROC = Path("/proc")


def _parents(proc: Path = PROC) -> dict[int, int]:
    """pid → parent pid of every process now running."""
    out = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # the command name (field 2) may hold spaces and parentheses: the fields after the last ')' are fixed
        out[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return out


def tree(root: int, parents: dict[int, int]) -> set[int]:
    """`root` and every process descended from it. A daemon that detached (the embedded PostgreSQL, whose parent
    becomes init) is not in it, so a database the systems share keeps its priority."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in found or pid not in parents:
            continue
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def _renice(pids: Iterable[int], nice: int, proc: Path = PROC) -> int:
    """Set every thread of `pids` to `nice`; returns how many threads were set."""
    done = 0
    for pid in pids:
        try:
            threads = [int(t.name) for t in (proc / str(pid) / "task").iterdir()]
        except OSError:
            continue
        for tid in threads:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                done += 1
            except OSError:  # exited meanwhile, or not ours to raise again
                continue
    return done


class Foreground:
    """`focus(name)` before each measured window: `name`'s tree at its own niceness, every other one at 19;
    `focus(None)` puts them all back. Systems the run did not start (a URL given) are left alone."""

    def __init__(self, roots: dict[str, int], *, proc: Path = PROC) -> None:
        self._roots = roots
        self._proc = proc
        self._own = os.getpriority(os.PRIO_PROCESS, 0)
        self.focused: str | None = None

    def focus(self, name: str | None) -> dict[str, int]:
        """Returns the threads set per system (tests and the run's log read it)."""
        parents = _parents(self._proc)
        set_counts = {system: _renice(tree(root, parents), self._own if name in (None, system) else BACKGROUND_NICE, self._proc)
                      for system, root in self._roots.items()}
        self.focused = name
        return set_counts


__all__ = ["Foreground", "BACKGROUND_NICE", "tree"]
