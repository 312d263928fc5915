"""The GPU path of the language model: Ray Serve LLM's `LLMServer` as the Planner deployment, and the engine's
`LanguageModel` over its handle.

`ray.serve.llm` imports only where vLLM is installed (the GPU image; here, the LLM venv), so everything in this
module imports it, or vLLM's request types, when called. The LLMServer takes OpenAI-protocol request objects:
a plan is a chat request with `response_format` json_schema (vLLM structured outputs) and the request's
`priority`; cancelling the call cancels the request in the engine, as with the CPU Planner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any, cast

from ray.serve import Application
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from engine.llm.lm import LmReply, LmRequest
from serve_app.args import PLANNER
from serve_app.metrics import LlmMetrics


def serve_llm_deployment(llm_config: dict[str, Any], serve_options: dict[str, Any]) -> Application:
    """Ray Serve LLM's LLMServer for `llm_config` (an LLMConfig's fields), deployed under the name Planner, with the
    Serve config's options for that name on top of what the LLMConfig derives (replicas, autoscaling, GPUs)."""
    from ray.serve.llm import LLMConfig, build_llm_deployment

    return build_llm_deployment(LLMConfig(**llm_config), override_serve_options={**serve_options, "name": PLANNER})


class ServeLlmLanguageModel:
    """`engine.llm.lm.LanguageModel` over an LLMServer handle. `model_id`: the LLMConfig's model id."""

    def __init__(
        self, handle: DeploymentHandle, model_id: str, metrics: LlmMetrics | None = None, *, route: str = "planner"
    ) -> None:
        self._handle = handle.options(stream=True)
        self._model_id = model_id
        self._metrics, self._route = metrics, route
        self._in_flight: dict[str, Any] = {}

    def for_route(self, route: str) -> ServeLlmLanguageModel:
        other = ServeLlmLanguageModel(self._handle, self._model_id, self._metrics, route=route)
        other._in_flight = self._in_flight
        return other

    def chat_request(self, request: LmRequest) -> Any:  # vLLM's ChatCompletionRequest (imported where vLLM is)
        from ray.serve.llm.openai_api_models import ChatCompletionRequest

        fmt = (
            {"type": "json_schema", "json_schema": {"name": "plan", "schema": request.json_schema, "strict": True}}
            if request.json_schema is not None
            else None
        )
        return ChatCompletionRequest(
            model=self._model_id,
            messages=request.messages,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            response_format=fmt,
            priority=request.priority,
            request_id=request.request_id,
            stream=False,
        )

    async def complete(self, request: LmRequest) -> LmReply:
        started = time.monotonic()
        response = cast(DeploymentResponseGenerator[Any], self._handle.chat.remote(self.chat_request(request)))
        self._in_flight[request.request_id] = response
        try:
            answer = None
            async for item in response:  # a non-streaming chat yields the whole ChatCompletionResponse once
                answer = item
        except asyncio.CancelledError:
            response.cancel()
            if self._metrics is not None:
                self._metrics.aborted(self._route, (time.monotonic() - started) * 1000.0)
            raise
        finally:
            self._in_flight.pop(request.request_id, None)
        reply = _reply(answer)
        if self._metrics is not None:
            self._metrics.observe(self._route, reply, (time.monotonic() - started) * 1000.0)
        return reply

    async def stream(self, request: LmRequest) -> AsyncIterator[dict[str, Any]]:
        """The whole answer as one delta (the planner and the replies read whole answers)."""
        reply = await self.complete(request)
        yield {
            "text": reply.text,
            "finish_reason": reply.finish_reason,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
        }

    async def abort(self, request_id: str) -> None:
        response = self._in_flight.pop(request_id, None)
        if response is not None:
            response.cancel()


def _reply(answer: Any) -> LmReply:
    choices = getattr(answer, "choices", None)
    if not choices:
        message = getattr(answer, "message", None) or getattr(getattr(answer, "error", None), "message", repr(answer))
        raise RuntimeError(f"the LLM server answered no choice: {message}")
    usage = getattr(answer, "usage", None)
    return LmReply(
        text=choices[0].message.content or "",
        finish_reason=choices[0].finish_reason or "stop",
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
    )
