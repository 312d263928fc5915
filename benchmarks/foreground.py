"""One system in the foreground: while one system is measured, every other system the run started waits under
Linux's SCHED_IDLE policy, so each is measured on the same machine with the same background.

All systems stay started and warm (the run interleaves them), but an idle Baton is not idle to the CPU: its Serve
controller, GCS, raylet, metrics pushes and model replicas took about a fifth of one core here, so the system
measured behind two idle Batons and a monolith paid for their housekeeping. Under SCHED_IDLE the others get CPU only
when the measured one leaves it (a weight of 3 against 1024), and a thread of the measured system that wakes up
preempts one of theirs at once; their timers still run, so nothing times out. Nice 19, used before, has the same
weight ratio but no such preemption on this kernel's scheduler (EEVDF): with two busy loops at nice 19 an idle turn
took 3-5 ms longer (fused Baton and monolith alike), with the same loops under SCHED_IDLE 1-2 ms. The policy keeps each
thread's niceness, so a thread a system set lower itself (the quiet encoder's worker, `models.idle_nice`) keeps it.
The policy is per thread on Linux: every thread of every process of a system's process tree is set.

A short window (the idle phase's blocks, a few seconds each) can go further: `focus(name, freeze=True)` also stops
the others' trees (SIGSTOP) until their next focus, so nothing of theirs runs at all while single turns are timed,
as when the encoder is timed alone (before any system starts and after all have stopped). A stopped system's clocks
run on, so freezing is kept to windows far shorter than its health-check timeouts (Ray's and Serve's are tens of
seconds); the long load windows keep SCHED_IDLE only.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from pathlib import Path

BACKGROUND_POLICY = "SCHED_IDLE"
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
        out[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
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


def _set_policy(pids: Iterable[int], policy: int, proc: Path = PROC) -> int:
    """Put every thread of `pids` under `policy` (niceness kept); returns how many threads were set."""
    done = 0
    for pid in pids:
        try:
            threads = [int(t.name) for t in (proc / str(pid) / "task").iterdir()]
        except OSError:
            continue
        for tid in threads:
            try:
                os.sched_setscheduler(tid, policy, os.sched_param(0))
                done += 1
            except OSError:  # exited meanwhile, or not ours to raise again
                continue
    return done


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:  # exited meanwhile
            continue


class Foreground:
    """`focus(name)` before each measured window: `name`'s tree under the normal policy, every other one under
    SCHED_IDLE (and stopped, with `freeze`); `focus(None)` puts them all back and lets every stopped one go on.
    Systems the run did not start (a URL given) are left alone."""

    def __init__(self, roots: dict[str, int], *, proc: Path = PROC) -> None:
        self._roots = roots
        self._proc = proc
        self.focused: str | None = None
        self.frozen: dict[str, set[int]] = {}  # system → the processes it had when it was stopped

    @property
    def state(self) -> tuple[str | None, bool]:
        """(the system in focus, whether the others are stopped)."""
        return self.focused, bool(self.frozen)

    def focus(self, name: str | None, *, freeze: bool = False) -> dict[str, int]:
        """Returns the threads set per system (tests and the run's log read it)."""
        parents = _parents(self._proc)
        set_counts = {}
        for system, root in self._roots.items():
            pids = tree(root, parents)
            if name in (None, system):
                if system in self.frozen:
                    _signal(self.frozen.pop(system) | pids, signal.SIGCONT)
                set_counts[system] = _set_policy(pids, os.SCHED_OTHER, self._proc)
                continue
            set_counts[system] = _set_policy(pids, os.SCHED_IDLE, self._proc)
            if freeze and name is not None:
                self.frozen.setdefault(system, set()).update(pids)
                _signal(pids, signal.SIGSTOP)
            elif system in self.frozen:
                _signal(self.frozen.pop(system), signal.SIGCONT)
        self.focused = name
        return set_counts


__all__ = ["Foreground", "BACKGROUND_POLICY", "tree"]
