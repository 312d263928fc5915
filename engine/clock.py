"""The calendar clock relative dates are read against (明天, 这周, 月底): the real one, or one pinned for tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo

Clock = Callable[[], datetime]  # the current time, with a zone


def system_clock(tz: tzinfo) -> Clock:
    return lambda: datetime.now(tz)


def pinned_clock(at: datetime, *, monotonic: Callable[[], float] = time.monotonic) -> Clock:
    """A clock that reads `at` when made and runs on from there at the real clock's pace."""
    started = monotonic()
    return lambda: at + timedelta(seconds=monotonic() - started)


def app_clock(tz: tzinfo, pinned_at: datetime | None) -> Clock:
    return pinned_clock(pinned_at) if pinned_at is not None else system_clock(tz)
