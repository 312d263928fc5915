"""Naming the threads a call started and lowering their priority (Linux)."""

from __future__ import annotations

import os
import threading

from deployments.thread_priority import lower_priority, park, started_threads, unpark


def test_only_the_threads_the_call_started_are_named_and_set():
    stop = threading.Event()

    def start_two():
        threads = [threading.Thread(target=stop.wait) for _ in range(2)]
        for t in threads:
            t.start()
        return threads

    elsewhere = threading.Thread(target=stop.wait)
    elsewhere.start()  # already running: not the call's
    try:
        threads, tids = started_threads(start_two)
        assert sorted(t.native_id for t in threads) == tids
        assert lower_priority(tids, 11) == tids
        assert [os.getpriority(os.PRIO_PROCESS, tid) for tid in tids] == [11, 11]
        assert os.getpriority(os.PRIO_PROCESS, elsewhere.native_id) == 0
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == 0
    finally:
        stop.set()


def test_parked_threads_wait_under_sched_idle_and_get_the_normal_policy_back_with_their_niceness():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        tid = thread.native_id
        lower_priority([tid], 13)
        park([tid])
        assert os.sched_getscheduler(tid) == os.SCHED_IDLE
        assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER  # only the threads named
        unpark([tid])
        assert os.sched_getscheduler(tid) == os.SCHED_OTHER and os.getpriority(os.PRIO_PROCESS, tid) == 13
        park([tid, 2**22 + 12345])  # a thread that has ended is skipped
        assert os.sched_getscheduler(tid) == os.SCHED_IDLE
    finally:
        stop.set()
        thread.join()
