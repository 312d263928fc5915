"""The engine's `LanguageModel` over an OpenAI-compatible chat-completions endpoint (`llm.backends.<name>`), through the
`openai` SDK's async client.

Every call is the caller's to bound: the engine awaits it inside the turn's deadline (engine.llm.lm.complete_within),
and cancelling the awaiting task cancels the SDK's request, which closes its connection (the server sees the client
go; `abort` has nothing left to do). The SDK's own timeout is the backend's `timeout_s` plus a margin, so the turn's
deadline is what fires. At most `max_concurrency` calls of this replica are in flight: a call past that fails at once
as busy (`LmFailed(busy=True)`) and its caller falls back — no call queues behind others toward the deadline. The SDK
retries nothing (a retry would be late). Failures become `LmFailed` with a reason fit for routing_debug: an HTTP
status, a timeout, a refused connection, a malformed answer — never the key, never the server's body.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import openai
from pydantic import SecretStr

from config.llm import LlmBackend
from engine.llm.lm import LmFailed, LmReply, LmRequest
from serve_app.metrics import LlmMetrics

SDK_MARGIN_S = 1.0  # the SDK's own timeout fires only after the caller's deadline would have
NO_KEY = "EMPTY"  # what a keyless endpoint (Ollama, a private vLLM) is sent; the SDK wants some key


def sdk_client(backend: LlmBackend, key: SecretStr | None) -> openai.AsyncOpenAI:
    """The SDK's client for `backend`. Every option the SDK would otherwise take from the process's environment
    (OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_ADMIN_KEY, OPENAI_BASE_URL) is given here, so nothing
    meant for another service reaches this endpoint."""
    return openai.AsyncOpenAI(
        api_key=key.get_secret_value() if key is not None else NO_KEY,
        admin_api_key="",
        organization="",
        project="",
        webhook_secret="",
        base_url=backend.base_url,
        timeout=backend.timeout_s + SDK_MARGIN_S,
        max_retries=0,
        default_headers=dict(backend.headers),
    )


class OpenAiLanguageModel:
    """`engine.llm.lm.LanguageModel` (plus `stream` and `for_route`) over the backend named `name`."""

    def __init__(
        self,
        name: str,
        backend: LlmBackend,
        key: SecretStr | None,
        *,
        metrics: LlmMetrics | None = None,
        client: openai.AsyncOpenAI | None = None,
        route: str = "planner",
    ) -> None:
        self.name, self._backend, self._metrics, self._route = name, backend, metrics, route
        self._client = client or sdk_client(backend, key)
        self._slots = asyncio.Semaphore(backend.max_concurrency)  # one per backend, shared by every route
        self._in_flight: dict[str, asyncio.Future[Any]] = {}

    def for_route(self, route: str) -> OpenAiLanguageModel:
        """The same backend (its client, its concurrency bound), its calls counted under `route`."""
        other = OpenAiLanguageModel(self.name, self._backend, None, metrics=self._metrics, client=self._client)
        other._route, other._slots, other._in_flight = route, self._slots, self._in_flight
        return other

    def _request(self, request: LmRequest, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._backend.model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.json_schema is not None and self._backend.json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": request.json_schema, "strict": True},
            }
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        return body

    def _take_slot(self) -> None:
        if self._slots.locked():
            raise LmFailed(f"{self.name}: busy ({self._backend.max_concurrency} calls in flight)", busy=True)

    async def complete(self, request: LmRequest) -> LmReply:
        self._take_slot()
        started = time.monotonic()
        async with self._slots:
            # its own task, so `abort` can stop this call alone; cancelling the caller cancels it as well
            call = asyncio.ensure_future(self._client.chat.completions.create(**self._request(request, stream=False)))
            self._in_flight[request.request_id] = call
            try:
                answer = await call
            except asyncio.CancelledError:
                self._observe_abort(started)
                caller = asyncio.current_task()
                if call.cancelled() and caller is not None and not caller.cancelling():
                    raise LmFailed(f"{self.name}: aborted") from None  # `abort`, not the caller, stopped it
                raise
            except Exception as exc:  # noqa: BLE001 — every failure is a named fallback for the caller
                raise self._failure(exc) from None
            finally:
                self._in_flight.pop(request.request_id, None)
        reply = self._reply_of(answer, (time.monotonic() - started) * 1000.0)
        self._observe(reply, (time.monotonic() - started) * 1000.0)
        return reply

    async def stream(self, request: LmRequest) -> AsyncIterator[dict[str, Any]]:
        """The answer's deltas (dicts: text, finish_reason, token counts) as the endpoint sends them; closing the
        iterator closes the connection."""
        self._take_slot()
        started = time.monotonic()
        finished = False
        async with self._slots:
            try:
                chunks = await self._client.chat.completions.create(**self._request(request, stream=True))
            except Exception as exc:  # noqa: BLE001
                raise self._failure(exc) from None
            try:
                usage: dict[str, int] = {"prompt_tokens": 0, "completion_tokens": 0}
                finish: str | None = None
                async for chunk in chunks:
                    if chunk.usage is not None:
                        usage = {
                            "prompt_tokens": chunk.usage.prompt_tokens,
                            "completion_tokens": chunk.usage.completion_tokens,
                        }
                    for choice in chunk.choices[:1]:
                        finish = choice.finish_reason or finish
                        if choice.delta.content:
                            yield {"text": choice.delta.content, "finish_reason": None, **usage}
                finished = finish is not None
                yield {"text": "", "finish_reason": finish or "abort", **usage}
            except (openai.APIError, ValueError) as exc:
                raise self._failure(exc) from None
            finally:
                await chunks.close()
                if not finished:
                    self._observe_abort(started)

    async def abort(self, request_id: str) -> None:
        """Cancels the call in flight under `request_id` (its connection closes); a no-op for one that is over."""
        call = self._in_flight.pop(request_id, None)
        if call is not None:
            call.cancel()

    async def aclose(self) -> None:
        await self._client.close()

    def _failure(self, exc: Exception) -> LmFailed:
        if isinstance(exc, LmFailed):
            return exc
        if isinstance(exc, openai.APITimeoutError):
            return LmFailed(f"{self.name}: timed out after {self._backend.timeout_s:g} s")
        if isinstance(exc, openai.APIStatusError):
            return LmFailed(f"{self.name}: HTTP {exc.status_code}")
        if isinstance(exc, openai.APIConnectionError):
            return LmFailed(f"{self.name}: connection failed")
        return LmFailed(f"{self.name}: malformed answer ({type(exc).__name__})")

    def _reply_of(self, answer: Any, e2e_ms: float) -> LmReply:
        choices = getattr(answer, "choices", None)
        if not choices:
            raise LmFailed(f"{self.name}: malformed answer (no choices)")
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            raise LmFailed(f"{self.name}: malformed answer (no text)")
        usage = getattr(answer, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        return LmReply(
            text=text,
            finish_reason=str(choices[0].finish_reason or "stop"),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            ttft_ms=None,
            cached_tokens=int(getattr(details, "cached_tokens", 0) or 0),
        )

    def _label(self) -> str:
        return f"{self._route}@{self.name}"  # a backend's name, never its address or key

    def _observe(self, reply: LmReply, e2e_ms: float) -> None:
        if self._metrics is not None:
            self._metrics.observe(self._label(), reply, e2e_ms)

    def _observe_abort(self, started: float) -> None:
        if self._metrics is not None:
            self._metrics.aborted(self._label(), (time.monotonic() - started) * 1000.0)
