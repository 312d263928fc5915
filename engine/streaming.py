"""Where a turn's generated text goes as it comes: the streaming client's sink for checked pieces (chat-stream's
`delta` events, the WebSocket's `execution.delta` frames)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

OnDelta = Callable[[str], Awaitable[None]]
# Where an agent's generated text goes, piece by piece, as it passes its checks: the streaming client of the message
# being executed (set by the transport around execution; None: nobody streams). A context variable, as the phase's
# end is: the agents' interface carries facts, not the transport's channels.
_DELTAS: ContextVar[OnDelta | None] = ContextVar("baton_text_deltas", default=None)


@contextmanager
def streaming_to(on_delta: OnDelta | None) -> Iterator[None]:
    """Inside the block, `text_deltas()` is `on_delta`."""
    token = _DELTAS.set(on_delta)
    try:
        yield
    finally:
        _DELTAS.reset(token)


def text_deltas() -> OnDelta | None:
    """Where the agent running now hands each checked piece of a generated text (None: nobody streams)."""
    return _DELTAS.get()
