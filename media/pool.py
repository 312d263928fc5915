"""The upload checks' own thread pool, with admission: decoding an upload is CPU work that must leave the event loop,
but not for the default executor (password hashing runs there), and never without a bound on how many wait."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from engine.errors import Overloaded

T = TypeVar("T")


class DecodePool:
    """At most `workers` checks run at once and `waiting` more queue; one more is refused at once with Overloaded
    (503, retry). A check counts until its thread finishes, even when its caller has gone."""

    def __init__(self, *, workers: int, waiting: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="media-check")
        self._capacity = workers + waiting
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    async def run(self, work: Callable[[], T]) -> T:
        with self._lock:
            if self._held >= self._capacity:
                raise Overloaded(
                    f"{self._held} uploads are being checked; retry shortly.",
                    field="file",
                )
            self._held += 1
        try:
            future = self._executor.submit(work)
        except BaseException:
            self._release()
            raise
        future.add_done_callback(lambda _: self._release())
        return await asyncio.wrap_future(future)

    def _release(self) -> None:
        with self._lock:
            self._held -= 1

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
