"""The replica batcher (no Ray): an idle replica never waits, a busy one gathers, deadlines are checked, abandoned
work stops."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from deployments.embedding import PassStopped, RunControl
from serve_app.replicas.batching import DeadlineExpired, MicroBatcher


class Work:
    """Batch work that takes `seconds`, records each batch, and stops early when its RunControl says so."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.batches: list[list[int]] = []
        self.started: list[float] = []
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, items: list[int], control: RunControl) -> list[int]:
        self.started.append(time.perf_counter())
        self.batches.append(list(items))
        self.gate.wait(5)
        give_up = time.monotonic() + self.seconds
        while time.monotonic() < give_up:
            if control.stopped.is_set():
                raise PassStopped("stopped")
            time.sleep(0.002)
        return [i * 10 for i in items]


def soon(s: float = 5.0) -> float:
    return time.time() + s


async def test_an_idle_replica_starts_at_once_without_waiting_for_a_batch():
    work = Work(0.0)
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.5)
    t0 = time.perf_counter()
    assert await batcher.submit(3, soon()) == 30
    assert time.perf_counter() - t0 < 0.1, "a lone request must not pay a batch wait"
    assert work.batches == [[3]]


async def test_requests_arriving_during_a_batch_gather_into_the_next_one():
    work = Work(0.05)
    work.gate.clear()
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.5)
    first = asyncio.create_task(batcher.submit(0, soon()))
    while not work.batches:
        await asyncio.sleep(0.001)
    rest = [asyncio.create_task(batcher.submit(i, soon())) for i in range(1, 6)]
    await asyncio.sleep(0.01)
    work.gate.set()
    assert await first == 0 and await asyncio.gather(*rest) == [10, 20, 30, 40, 50]
    assert work.batches == [[0], [1, 2, 3, 4, 5]]
    assert batcher.stats["largest_batch"] == 5


async def test_a_batch_holds_at_most_the_batch_size():
    work = Work(0.02)
    work.gate.clear()
    batcher = MicroBatcher(work, max_batch_size=2, max_wait_s=0.5)
    tasks = [asyncio.create_task(batcher.submit(i, soon())) for i in range(5)]
    await asyncio.sleep(0.01)
    work.gate.set()
    assert await asyncio.gather(*tasks) == [0, 10, 20, 30, 40]
    assert [len(b) for b in work.batches] == [1, 2, 2]


async def test_with_a_second_batch_allowed_a_queued_request_waits_at_most_max_wait():
    work = Work(0.3)
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.05, max_concurrent=2)
    first = asyncio.create_task(batcher.submit(0, soon()))
    while not work.batches:
        await asyncio.sleep(0.001)
    t0 = time.perf_counter()
    second = asyncio.create_task(batcher.submit(1, soon()))
    while len(work.batches) < 2:
        await asyncio.sleep(0.001)
    waited = work.started[1] - t0
    assert 0.04 <= waited < 0.2, waited
    assert await first == 0 and await second == 10


async def test_a_request_whose_deadline_passed_in_the_queue_is_dropped_before_its_batch():
    work = Work(0.1)
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.5)
    first = asyncio.create_task(batcher.submit(0, soon()))
    while not work.batches:
        await asyncio.sleep(0.001)
    late = asyncio.create_task(batcher.submit(1, time.time() + 0.03))
    on_time = asyncio.create_task(batcher.submit(2, soon()))
    with pytest.raises(DeadlineExpired):
        await late
    assert await first == 0 and await on_time == 20
    assert work.batches == [[0], [2]], "the expired request never reached the model"
    assert batcher.stats["expired"] == 1


async def test_an_already_expired_request_never_queues():
    work = Work(0.0)
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.5)
    with pytest.raises(DeadlineExpired):
        await batcher.submit(1, time.time() - 0.01)
    assert work.batches == []


async def test_a_batch_nobody_waits_for_is_stopped_mid_work():
    work = Work(5.0)
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.5)
    task = asyncio.create_task(batcher.submit(1, soon(10)))
    while not work.batches:
        await asyncio.sleep(0.001)
    t0 = time.perf_counter()
    task.cancel()
    while batcher.stats["stopped"] == 0:
        await asyncio.sleep(0.005)
        assert time.perf_counter() - t0 < 1.0, "the running work was not stopped"
    work.seconds = 0.0
    assert await batcher.submit(2, soon()) == 20  # the replica goes on serving


async def test_a_batch_whose_every_deadline_passed_is_stopped():
    work = Work(5.0)
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.5)
    t0 = time.perf_counter()
    with pytest.raises(DeadlineExpired):
        await batcher.submit(1, time.time() + 0.1)
    assert time.perf_counter() - t0 < 1.0
    assert batcher.stats["stopped"] == 1


async def test_a_failing_batch_fails_its_requests_only():
    calls = []

    def flaky(items, control):
        calls.append(items)
        if len(calls) == 1:
            raise RuntimeError("model broke")
        return items

    batcher = MicroBatcher(flaky, max_batch_size=16, max_wait_s=0.5)
    with pytest.raises(RuntimeError, match="model broke"):
        await batcher.submit(1, soon())
    assert await batcher.submit(2, soon()) == 2


async def test_a_stale_slow_estimate_does_not_keep_work_from_running(monkeypatch):
    """A slow warm-up must not refuse every later request forever (its estimate could never be corrected)."""
    import serve_app.replicas.batching as batching

    work = Work(0.0)
    batcher = MicroBatcher(work, max_batch_size=16, max_wait_s=0.5)
    await batcher.submit(1, soon())
    batcher.estimate_s = 10.0  # as if the last batch had taken 10 s
    with pytest.raises(DeadlineExpired):
        await batcher.submit(2, soon(1.0))  # a fresh estimate is trusted
    monkeypatch.setattr(batching, "ESTIMATE_FRESH_S", 0.0)
    assert await batcher.submit(3, soon(1.0)) == 30
    assert batcher.estimate_s < 10.0
