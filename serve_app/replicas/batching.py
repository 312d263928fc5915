"""Batching that knows when to wait, for one model replica (plain asyncio; no Ray).

An idle replica starts a request at once: a batch of one, no waiting. While a batch runs, new requests
queue; when it ends, the next batch takes everything queued (up to `max_batch_size`). With more than one
concurrent batch allowed, a queued request waits at most `max_wait_s` for the running batch before a second
one starts. Before a batch runs, every queued request is checked against its deadline and dropped when its
answer could no longer arrive in time; a running batch is stopped (`RunControl.stop`) once every request
in it was cancelled or ran out of time. The model work runs on the batcher's own threads, so the replica's
event loop stays free to accept and cancel requests.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from deployments.embedding import PassStopped, RunControl

RunBatch = Callable[[list[Any], RunControl], list[Any]]
# a batch-time estimate older than this is not trusted to refuse work: refusing on a stale (say, warm-up) estimate
# would keep any batch from running and the estimate from ever being corrected
ESTIMATE_FRESH_S = 5.0


class DeadlineExpired(Exception):
    """The request's deadline passed (or would pass) before its work could finish; computing it would be wasted."""


@dataclass
class _Entry:
    item: Any
    deadline: float
    future: asyncio.Future
    enqueued: float = field(default_factory=time.monotonic)


class MicroBatcher:
    def __init__(
        self,
        run: RunBatch,
        *,
        max_batch_size: int,
        max_wait_s: float,
        max_concurrent: int = 1,
        name: str = "batch",
        smoothing: float = 0.2,
    ) -> None:
        self._run_batch = run
        self._max_batch = max_batch_size
        self._max_wait_s = max_wait_s
        self._max_concurrent = max_concurrent
        self._executor = ThreadPoolExecutor(max_workers=max_concurrent, thread_name_prefix=f"baton-{name}")
        self._queue: deque[_Entry] = deque()
        self._running = 0
        self._timer: asyncio.TimerHandle | None = None
        self._smoothing = smoothing
        self._last_s = 0.0
        self._last_done = 0.0
        self.estimate_s = 0.0  # moving average of a batch's duration: a request needs at least this much time left
        self.stats = {"batches": 0, "items": 0, "largest_batch": 0, "expired": 0, "stopped": 0, "failed": 0}

    async def submit(self, item: Any, deadline: float) -> Any:
        """The item's result, computed in some batch; DeadlineExpired when it cannot finish by `deadline`
        (epoch seconds). Cancelling the caller drops the item (and stops its batch if nothing else needs it)."""
        if time.time() + self._estimate() >= deadline:
            self.stats["expired"] += 1
            raise DeadlineExpired("the deadline leaves no time for the work")
        entry = _Entry(item, deadline, asyncio.get_running_loop().create_future())
        self._queue.append(entry)
        self._kick()
        return await entry.future

    def _kick(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue and self._running < self._max_concurrent:
            if self._running:
                # busy: a second batch starts only when this one is full or its oldest request waited long enough
                wait_left = self._max_wait_s - (time.monotonic() - self._queue[0].enqueued)
                if len(self._queue) < self._max_batch and wait_left > 0:
                    if self._timer is None:
                        self._timer = loop.call_later(wait_left, self._on_timer)
                    return
            batch = self._take()
            if batch:
                self._running += 1
                asyncio.ensure_future(self._run(batch))

    def _on_timer(self) -> None:
        self._timer = None
        self._kick()

    def _take(self) -> list[_Entry]:
        batch: list[_Entry] = []
        now, estimate = time.time(), self._estimate()
        while self._queue and len(batch) < self._max_batch:
            entry = self._queue.popleft()
            if entry.future.done():  # its caller gave up
                continue
            if now + estimate >= entry.deadline:
                self.stats["expired"] += 1
                entry.future.set_exception(DeadlineExpired("the deadline passed while the request was queued"))
                continue
            batch.append(entry)
        return batch

    async def _run(self, batch: list[_Entry]) -> None:
        loop = asyncio.get_running_loop()
        control = RunControl()

        def abandoned(_: asyncio.Future) -> None:
            if all(e.future.done() for e in batch):
                control.stop()

        for entry in batch:
            entry.future.add_done_callback(abandoned)
        # when every request of the batch is past its deadline, nobody can use the answer
        out_of_time = loop.call_later(max(0.0, max(e.deadline for e in batch) - time.time()), control.stop)
        started = time.perf_counter()
        try:
            results = await loop.run_in_executor(self._executor, self._run_batch, [e.item for e in batch], control)
            for entry, result in zip(batch, results, strict=False):
                if not entry.future.done():
                    entry.future.set_result(result)
            self._observe(time.perf_counter() - started, len(batch))
        except PassStopped:
            self.stats["stopped"] += 1
            for entry in batch:
                if not entry.future.done():
                    entry.future.set_exception(DeadlineExpired("stopped: the deadline passed during the work"))
        except Exception as exc:
            self.stats["failed"] += 1
            for entry in batch:
                if not entry.future.done():
                    entry.future.set_exception(exc)
        finally:
            out_of_time.cancel()
            self._running -= 1
            self._kick()

    async def on_worker(self, fn: Callable[[], Any]) -> Any:
        """Run `fn` on one of the batch threads (warm-ups: the first call on a fresh thread is slow)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def _estimate(self) -> float:
        return self.estimate_s if time.monotonic() - self._last_done < ESTIMATE_FRESH_S else 0.0

    def warmed(self) -> None:
        """Forget the warm-up: its first batches are slower than any later one and would count as the norm."""
        self.estimate_s = self._last_s
        self.stats = {k: 0 for k in self.stats}

    def _observe(self, seconds: float, size: int) -> None:
        self._last_s = seconds
        self._last_done = time.monotonic()
        self.estimate_s = (
            seconds
            if not self.stats["batches"]
            else (1 - self._smoothing) * self.estimate_s + self._smoothing * seconds
        )
        self.stats["batches"] += 1
        self.stats["items"] += size
        self.stats["largest_batch"] = max(self.stats["largest_batch"], size)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
