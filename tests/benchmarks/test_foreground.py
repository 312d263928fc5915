"""One system measured at a time: the others' whole process trees wait under SCHED_IDLE, then get their policy back,
each thread keeping its niceness."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks.foreground import Foreground, tree

# a parent that starts a child and both sleep: a system's process tree in small
FAMILY = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


def test_a_tree_is_the_root_and_its_descendants_only():
    parents = {1: 0, 10: 1, 11: 10, 12: 11, 20: 1, 21: 20, 30: 1}
    assert tree(10, parents) == {10, 11, 12}
    assert tree(20, parents) == {20, 21}
    assert tree(99, parents) == set()  # gone: nothing


def _nice(pid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, pid)


def _policy(pid: int) -> int:
    return os.sched_getscheduler(pid)


def _family() -> tuple[subprocess.Popen, int]:
    parent = subprocess.Popen([sys.executable, "-c", FAMILY])
    for _ in range(100):
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == parent.pid]
        if children:
            return parent, children[0]
        time.sleep(0.05)
    raise AssertionError("the child did not start")


def _ppid(pid: int) -> int | None:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])


@pytest.fixture
def families():
    made = [_family(), _family()]
    yield made
    for parent, child in made:
        for pid in (child, parent.pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        parent.wait()


def test_the_measured_system_keeps_its_priority_and_every_process_of_the_others_waits(families):
    (a, a_child), (b, b_child) = families
    os.setpriority(os.PRIO_PROCESS, b_child, 7)  # a thread a system lowered itself keeps its niceness throughout
    fg = Foreground({"a": a.pid, "b": b.pid})
    counts = fg.focus("a")
    assert counts["a"] >= 2 and counts["b"] >= 2  # every thread of parent and child
    assert (_policy(a.pid), _policy(a_child)) == (os.SCHED_OTHER, os.SCHED_OTHER)
    assert (_policy(b.pid), _policy(b_child)) == (os.SCHED_IDLE, os.SCHED_IDLE)
    if os.geteuid() != 0:
        return  # leaving SCHED_IDLE needs CAP_SYS_NICE: the runner does not isolate without it
    fg.focus("b")
    assert (_policy(a.pid), _policy(a_child)) == (os.SCHED_IDLE, os.SCHED_IDLE)
    assert (_policy(b.pid), _policy(b_child)) == (os.SCHED_OTHER, os.SCHED_OTHER)
    fg.focus(None)
    assert {_policy(p) for p in (a.pid, a_child, b.pid, b_child)} == {os.SCHED_OTHER}
    assert (_nice(a.pid), _nice(a_child), _nice(b.pid), _nice(b_child)) == (0, 0, 0, 7)


def _state(pid: int) -> str:
    stat = open(f"/proc/{pid}/stat").read()
    return stat[stat.rindex(")") + 2 :].split()[0]


def _wait_state(pid: int, want: set[str]) -> str:
    for _ in range(100):
        if (state := _state(pid)) in want:
            return state
        time.sleep(0.02)
    return _state(pid)


def test_a_freeze_stops_every_process_of_the_others_until_their_own_focus_or_the_end(families):
    (a, a_child), (b, b_child) = families
    fg = Foreground({"a": a.pid, "b": b.pid})
    fg.focus("a", freeze=True)
    assert fg.state == ("a", True)
    assert {_wait_state(p, {"T"}) for p in (b.pid, b_child)} == {"T"}  # stopped
    assert {_wait_state(p, {"S", "R"}) for p in (a.pid, a_child)} <= {"S", "R"}
    fg.focus("b", freeze=True)  # b goes on, a stops
    assert {_wait_state(p, {"S", "R"}) for p in (b.pid, b_child)} <= {"S", "R"}
    assert {_wait_state(p, {"T"}) for p in (a.pid, a_child)} == {"T"}
    fg.focus("b")  # a load window: a waits under SCHED_IDLE, running
    assert {_wait_state(p, {"S", "R"}) for p in (a.pid, a_child)} <= {"S", "R"} and fg.state == ("b", False)
    assert (_policy(a.pid), _policy(a_child)) == (os.SCHED_IDLE, os.SCHED_IDLE)
    fg.focus("a", freeze=True)
    fg.focus(None)  # the end of the run: nothing stays stopped
    assert {_wait_state(p, {"S", "R"}) for p in (a.pid, a_child, b.pid, b_child)} <= {"S", "R"}
    assert fg.state == (None, False)
