"""The engine's `LanguageModel` over the Planner deployment's handle, with the planner's metrics.

Every call goes through the handle, so the turn's deadline and its cancellation reach the engine: cancelling the
`DeploymentResponse` cancels the replica's task, and vLLM aborts the request there (decoding stops, the KV cache
is freed). `abort(request_id)` cancels the call in flight under that id; it is a no-op for one that finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any, cast

from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from engine.llm.lm import LmReply, LmRequest
from serve_app.metrics import LlmMetrics


def request_dict(request: LmRequest) -> dict[str, Any]:
    return {
        "messages": request.messages,
        "json_schema": request.json_schema,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "request_id": request.request_id,
        "priority": request.priority,
    }


def reply_of(answer: dict[str, Any]) -> LmReply:
    return LmReply(
        text=answer.get("text", ""),
        finish_reason=answer.get("finish_reason") or "abort",
        prompt_tokens=int(answer.get("prompt_tokens", 0)),
        completion_tokens=int(answer.get("completion_tokens", 0)),
        ttft_ms=answer.get("ttft_ms"),
        cached_tokens=int(answer.get("cached_tokens") or 0),
    )


class HandleLanguageModel:
    """`engine.llm.lm.LanguageModel` (plus `stream`) over the Planner deployment. `route` labels the metrics:
    who asked (planner, reply, openai)."""

    def __init__(self, handle: DeploymentHandle, metrics: LlmMetrics | None = None, *, route: str = "planner") -> None:
        self._handle = handle
        self._metrics = metrics
        self._route = route
        self._in_flight: dict[str, Any] = {}

    def for_route(self, route: str) -> HandleLanguageModel:
        """The same model, its calls counted under `route`."""
        other = HandleLanguageModel(self._handle, self._metrics, route=route)
        other._in_flight = self._in_flight  # one table: an abort by id finds the call whoever started it
        return other

    async def complete(self, request: LmRequest) -> LmReply:
        started = time.monotonic()
        response = self._handle.complete.remote(request_dict(request))
        self._in_flight[request.request_id] = response
        try:
            answer = await response
        except asyncio.CancelledError:
            response.cancel()
            self._observe_abort(started)
            raise
        finally:
            self._in_flight.pop(request.request_id, None)
        reply = reply_of(answer)
        self._observe(reply, answer.get("e2e_ms") or (time.monotonic() - started) * 1000.0)
        return reply

    async def stream(self, request: LmRequest) -> AsyncIterator[dict[str, Any]]:
        """The answer's deltas (dicts: text, finish_reason, token counts); closing the iterator aborts the request."""
        started = time.monotonic()
        response = cast(
            DeploymentResponseGenerator[dict[str, Any]],
            self._handle.options(stream=True).stream.remote(request_dict(request)),
        )
        self._in_flight[request.request_id] = response
        last: dict[str, Any] | None = None
        try:
            async for delta in response:
                last = delta
                yield delta
        finally:
            self._in_flight.pop(request.request_id, None)
            if last is None or last.get("finish_reason") is None:
                response.cancel()
                self._observe_abort(started)
            else:
                self._observe(reply_of(last), last.get("e2e_ms") or (time.monotonic() - started) * 1000.0)

    async def abort(self, request_id: str) -> None:
        response = self._in_flight.pop(request_id, None)
        if response is not None:
            response.cancel()

    async def stats(self) -> dict[str, Any]:
        return await self._handle.stats.remote()

    def _observe(self, reply: LmReply, e2e_ms: float) -> None:
        if self._metrics is not None:
            self._metrics.observe(self._route, reply, e2e_ms)

    def _observe_abort(self, started: float) -> None:
        if self._metrics is not None:
            self._metrics.aborted(self._route, (time.monotonic() - started) * 1000.0)
