"""The OpenAI-compatible endpoint's logic: a chat-completions request to the Planner deployment and back.

External clients (the `openai` SDK, load generators) reach the same language model the LLM planner uses, through
the same handle, so the time limit and a client that leaves reach the engine: the request is aborted there (its
KV cache freed). They queue after interactive turns (`PRIORITY_EXTERNAL`) and before background work.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from config.llm import LlmConfig
from engine.errors import BatonError, InvalidInput
from engine.llm.lm import PRIORITY_EXTERNAL, LmRequest
from protocol.openai import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    Choice,
    ChunkChoice,
    Delta,
    JsonObjectFormat,
    JsonSchemaResponseFormat,
    ModelCard,
    ModelList,
    TextFormat,
    Usage,
)

ROLES = {"developer": "system"}  # the newer name of the system role


class ModelNotFound(BatonError):
    code = "model_not_found"


class LlmUnavailable(BatonError):
    """No language model is deployed (the app's `planner` is none), or it failed."""

    code = "llm_unavailable"


class LlmTimeout(BatonError):
    code = "llm_timeout"


def answer_schema(
    response_format: TextFormat | JsonObjectFormat | JsonSchemaResponseFormat | None,
) -> dict[str, Any] | None:
    """The JSON schema the answer must follow, from the request's `response_format` (None: free text)."""
    if isinstance(response_format, JsonSchemaResponseFormat):
        return response_format.json_schema.schema_
    if isinstance(response_format, JsonObjectFormat):
        return {"type": "object"}
    return None


class OpenAiServing:
    def __init__(self, llm: Any, cfg: LlmConfig, *, created: int | None = None) -> None:
        """`llm`: the Planner as a LanguageModel with `stream` (serve_app.replicas.llm_client); None when none is
        deployed."""
        self._llm = llm
        self._cfg = cfg
        self._created = created or int(time.time())

    def models(self) -> ModelList:
        return ModelList(data=[ModelCard(id=self._cfg.served_model_name, created=self._created)] if self._llm else [])

    def request(self, body: ChatCompletionRequest) -> LmRequest:
        """The engine request for `body`, or the typed error that refuses it."""
        if self._llm is None:
            raise LlmUnavailable("No language model is deployed in this app.")
        if body.model != self._cfg.served_model_name:
            raise ModelNotFound(
                f"The model '{body.model}' does not exist; GET /v1/models lists '{self._cfg.served_model_name}'.",
                field="model",
            )
        limit = body.token_limit(self._cfg.reply_max_tokens)
        if limit > self._cfg.max_request_tokens:
            raise InvalidInput(
                f"At most {self._cfg.max_request_tokens} tokens may be asked for; got {limit}.",
                field="max_completion_tokens" if body.max_completion_tokens else "max_tokens",
            )
        messages = [{"role": ROLES.get(m.role, m.role), "content": m.text()} for m in body.messages]
        temperature = body.temperature if body.temperature is not None else self._cfg.temperature
        schema = answer_schema(body.response_format)
        return LmRequest(
            messages=messages,
            json_schema=schema,
            max_tokens=limit,
            temperature=temperature,
            request_id=f"chatcmpl-{uuid.uuid4().hex}",
            priority=PRIORITY_EXTERNAL,
        )

    async def complete(self, request: LmRequest, model: str) -> ChatCompletion:
        try:
            reply = await asyncio.wait_for(self._llm.complete(request), self._cfg.request_timeout_s)
        except TimeoutError as exc:
            raise LlmTimeout(
                f"The model did not finish within {self._cfg.request_timeout_s:g} s; the request was aborted."
            ) from exc
        except BatonError:
            raise
        except Exception as exc:  # the replica failed or is unreachable: retry later
            raise LlmUnavailable(f"The language model failed: {type(exc).__name__}.") from exc
        return ChatCompletion(
            id=request.request_id,
            created=int(time.time()),
            model=model,
            choices=[Choice(message=AssistantMessage(content=reply.text), finish_reason=reply.finish_reason)],
            usage=Usage(
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                total_tokens=reply.prompt_tokens + reply.completion_tokens,
            ),
        )

    async def stream(self, request: LmRequest, model: str) -> AsyncIterator[str]:
        """Server-sent events: a role chunk, content chunks, a last chunk with the finish reason and usage, [DONE].
        Past the time limit the request is aborted and the stream ends with finish_reason "abort"."""
        created = int(time.time())

        def chunk(delta: Delta, finish: str | None = None, usage: Usage | None = None) -> str:
            body = ChatCompletionChunk(
                id=request.request_id,
                created=created,
                model=model,
                choices=[ChunkChoice(delta=delta, finish_reason=finish)],
                usage=usage,
            )
            return f"data: {body.model_dump_json(exclude_none=True)}\n\n"

        yield chunk(Delta(role="assistant", content=""))
        finish, usage = "abort", None
        try:
            async with asyncio.timeout(self._cfg.request_timeout_s):
                async for delta in self._llm.stream(request):
                    if delta["text"]:
                        yield chunk(Delta(content=delta["text"]))
                    if delta.get("finish_reason"):
                        finish = delta["finish_reason"]
                        usage = Usage(
                            prompt_tokens=delta["prompt_tokens"],
                            completion_tokens=delta["completion_tokens"],
                            total_tokens=delta["prompt_tokens"] + delta["completion_tokens"],
                        )
        except TimeoutError:
            pass  # aborted in the engine when the stream closed; the last chunk says so
        yield chunk(Delta(), finish, usage)
        yield "data: [DONE]\n\n"
