"""Lowering the CPU priority of the threads a library starts (Linux: niceness is per thread).

onnxruntime gives a session of n intra-op threads n - 1 worker threads of its own, which spin for tens of
milliseconds after each pass before they sleep. `started_threads` names the threads one call started, so their
niceness can be raised: a worker at nice 19 still runs a pass at full speed on an otherwise idle core, but its
spinning afterwards yields to anything else that wants the core (the turn's commit, the database, the reply).
`park` goes further between passes: under SCHED_IDLE a spinning worker gives its core to any thread that wakes,
at once, where a nice-19 one may keep it for the rest of its time slice (measured on Linux 6.18's EEVDF:
busy loops at nice 19 cost an idle turn 3-5 ms, under SCHED_IDLE 1-2 ms); `unpark` before the next pass.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
TASKS = Path("/proc/self/task")


def _threads() -> dict[int, str]:
    """tid → name of every thread of this process; empty where /proc is missing (not Linux)."""
    out: dict[int, str] = {}
    try:
        entries = list(TASKS.iterdir())
    except OSError:
        return out
    for entry in entries:
        try:
            out[int(entry.name)] = (entry / "comm").read_text().strip()
        except OSError:
            continue  # ended meanwhile
    return out


def started_threads(create: Callable[[], T]) -> tuple[T, list[int]]:
    """`create()` and the threads it started. A thread inherits the name of the thread that started it, so only new
    threads carrying the caller's name count: threads other code started meanwhile name themselves."""
    before = _threads()
    own = before.get(threading.get_native_id())
    result = create()
    return result, sorted(tid for tid, name in _threads().items() if tid not in before and name == own)


def lower_priority(tids: list[int], nice: int) -> list[int]:
    """Set each thread's niceness to `nice` (raising it needs no privilege); returns the threads set."""
    done = []
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        except OSError:  # ended meanwhile
            continue
        done.append(tid)
    return done


def park(tids: list[int]) -> None:
    """Move the threads to SCHED_IDLE: they run only on a core nothing else wants."""
    _policy(tids, getattr(os, "SCHED_IDLE", None))


def unpark(tids: list[int]) -> None:
    """Move the threads back to SCHED_OTHER; each keeps its niceness."""
    _policy(tids, getattr(os, "SCHED_OTHER", None))


def _policy(tids: list[int], policy: int | None) -> None:
    if policy is None or not hasattr(os, "sched_setscheduler"):  # not Linux: nothing to do
        return
    for tid in tids:
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(0))
        except OSError:  # ended meanwhile, or a platform without it
            continue
