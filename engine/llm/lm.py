"""The interface the engine calls a language model through, and the deadline-bounded call built on it.

The serving layer implements `LanguageModel` (the vLLM Planner deployment; DSPy programs sit on the same
interface), so the engine stays plain async Python: it builds an `LmRequest`, awaits `complete`, and when it
gives up on a request it says so with `abort`, which lets the server stop decoding and free the request's KV
cache instead of finishing an answer nobody will read.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from engine.deadline import Deadline, StageTimeout

logger = logging.getLogger(__name__)

PRIORITY_INTERACTIVE = 0  # a turn is waiting on it
PRIORITY_EXTERNAL = 5  # an OpenAI-compatible client of /v1/chat/completions: after turns, before background work
PRIORITY_BACKGROUND = 10  # summaries, offline evaluation: may queue behind every interactive request
ABORT_TIMEOUT_S = 0.5  # how long a caller that gave up waits for the abort to be delivered

# aborts still in flight after their caller stopped waiting: held so the event loop does not drop them
_PENDING_ABORTS: set[asyncio.Task[bool]] = set()


class LmFailed(Exception):
    """A model call that failed in a way its backend names (busy, timed out, an HTTP status, a malformed answer).
    The message is safe to show in routing_debug and logs: it never holds a key or the server's body."""

    def __init__(self, reason: str, *, busy: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.busy = reason, busy


@dataclass(frozen=True)
class LmRequest:
    """One completion request.

    `messages`: chat messages ({role, content}), system first. `json_schema`: when set, the output is
    constrained to it (vLLM structured outputs); None for free text. `request_id`: unique per request, the
    handle `LanguageModel.abort` takes. `priority`: lower is served sooner (PRIORITY_INTERACTIVE,
    PRIORITY_BACKGROUND)."""

    messages: list[dict[str, str]]
    json_schema: dict[str, Any] | None
    max_tokens: int
    temperature: float
    request_id: str
    priority: int = PRIORITY_INTERACTIVE

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")
        if not self.request_id:
            raise ValueError("request_id must not be empty")


@dataclass(frozen=True)
class LmReply:
    """What the model answered. `finish_reason` as the server reports it ("stop", "length", ...): "length"
    means the text was cut at max_tokens. `ttft_ms`: time to the first token, None when unknown.
    `cached_tokens`: the prompt tokens the server found in its prefix cache (0 when unknown)."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    ttft_ms: float | None = None
    cached_tokens: int = 0


@runtime_checkable
class LanguageModel(Protocol):
    async def complete(self, request: LmRequest) -> LmReply:
        """The model's answer to `request`. May raise on a transport or server failure; is cancellable."""
        ...

    async def abort(self, request_id: str) -> None:
        """Stop generating for `request_id` and release what it holds. Must be a no-op for an id that is
        unknown or already finished: the caller cannot tell whether the request reached the server."""
        ...


@runtime_checkable
class RoutedLanguageModel(LanguageModel, Protocol):
    """A deployed language model: its answers also stream, and each caller (planner, reply, openai, ...) gets the same
    model with its calls counted under its own `route`."""

    def for_route(self, route: str) -> RoutedLanguageModel: ...

    def stream(self, request: LmRequest) -> AsyncIterator[dict[str, Any]]:
        """The answer's deltas as it is decoded (dicts: text, finish_reason, token counts); closing the iterator
        aborts the request."""
        ...


def new_request_id(prefix: str = "lm") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


async def complete_within(
    lm: LanguageModel, request: LmRequest, *, deadline: Deadline, stage: str, budget_s: float
) -> LmReply:
    """`lm.complete(request)` for at most min(budget_s, the turn's work time left), timed as `stage`.

    On StageTimeout, or when the caller is cancelled, the request is aborted (`lm.abort(request.request_id)`)
    before the exception propagates; the abort is shielded from a further cancellation and waited for at most
    ABORT_TIMEOUT_S, so giving up never costs the turn more than that. Other errors of `complete` propagate
    as they are, without an abort: the request is over when the call has failed."""
    started = False
    try:
        async with deadline.phase(stage, budget_s):
            started = True
            return await lm.complete(request)
    except (StageTimeout, asyncio.CancelledError):
        if started:  # with no time left the phase raises before the call: nothing reached the server
            await abort_quietly(lm, request.request_id)
        raise


async def abort_quietly(lm: LanguageModel, request_id: str, *, timeout_s: float = ABORT_TIMEOUT_S) -> bool:
    """Ask `lm` to abort `request_id`, waiting at most `timeout_s`; True when it finished in time without error.

    A failing abort is logged, not raised: it must not mask why the request was given up. The abort is not
    cancelled with its caller, and when the wait ends first it carries on in the background; a cancellation
    of the caller while it waits still propagates to the caller."""
    task = asyncio.ensure_future(_abort(lm, request_id))
    _PENDING_ABORTS.add(task)
    task.add_done_callback(_PENDING_ABORTS.discard)
    # asyncio.wait cancels the task neither on timeout nor when this coroutine is cancelled: that is the shield
    # (a cancellation while waiting still propagates: it is the caller's to see)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        logger.warning("abort of %s still pending after %.0f ms", request_id, timeout_s * 1000)
        return False
    return task.result()


async def _abort(lm: LanguageModel, request_id: str) -> bool:
    try:
        await lm.abort(request_id)
    except Exception:  # noqa: BLE001 — the server may already have dropped it; the KV cache is then free anyway
        logger.warning("abort of %s failed", request_id, exc_info=True)
        return False
    return True
