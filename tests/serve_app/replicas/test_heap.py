"""Freezing the start-up heap: garbage is collected first, survivors leave later collections."""

from __future__ import annotations

import gc
import weakref

from serve_app.replicas.heap import freeze_startup_heap


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
        # frozen: no longer in any generation a collection walks (the count itself moves as other threads free
        # frozen objects, so it is not compared)
        assert frozen > 0 and not any(o is kept for o in gc.get_objects())
        assert kept.me is kept
    finally:
        gc.unfreeze()
