"""Freezing the start-up heap: garbage is collected first, survivors leave later collections."""
from __future__ import annotations

import gc
import weakref

from serve_app.heap import freeze_startup_heap


class _Node:
    pass


def test_garbage_is_collected_before_the_survivors_are_frozen():
    kept = _Node()
    kept.me = kept
    dead = _Node()
    dead.me = dead  # a cycle: only the collector frees it
    gone = weakref.ref(dead)
    del dead
    try:
        frozen = freeze_startup_heap()
        assert gone() is None  # collected, not frozen for the life of the process
        assert frozen == gc.get_freeze_count() > 0
        assert kept.me is kept
    finally:
        gc.unfreeze()
