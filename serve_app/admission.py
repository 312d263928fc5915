"""Admission control: a bounded count of turns in flight per replica; the rest are shed with Retry-After."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from engine.errors import Overloaded


class Admission:
    def __init__(self, max_in_flight: int) -> None:
        self.max_in_flight = max_in_flight
        self.in_flight = 0

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        if self.in_flight >= self.max_in_flight:
            raise Overloaded(f"{self.in_flight} turns in flight (limit {self.max_in_flight}); retry shortly.")
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
