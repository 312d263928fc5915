"""The Planner deployment: the language model the LLM planner, the DSPy programs and `/v1/chat/completions` call.

A plain class, bound in the app builder. On this CPU path it runs in the LLM virtual environment (`.venv-llm`,
joined to the app with a `runtime_env` `py_executable`), so it imports nothing of the main venv's packages: only
vLLM (through `deployments.vllm_engine`) and the fault spec. Requests and replies are plain dicts (see
`deployments.vllm_engine`), the same on both sides of the handle.

Cancellation is the abort: when the caller cancels its `DeploymentResponse` (the turn's deadline passed), Serve
cancels the method's task here, and the engine aborts the request inside vLLM (decoding stops, its KV cache is
freed). `abort(request_id)` does the same by id. `stats()` counts both, and how many tokens an aborted request
had decoded, so a test can see an abort landed mid-decode.

Fault injection (stage `planner_llm`: `delay_ms`, `error`, `tokens=N` — decode N tokens, ignoring the end of
sequence and the schema) comes from the options' `faults` and `faults_file` (the builder's settings: `BATON_FAULTS`
and the run's faults file) or `user_config: {faults: ...}`.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from deployments.faults import InjectedFault, StageFaults
from deployments.vllm_engine import VllmEngine, joined

STAGE = "planner_llm"
WARMUP_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
RECENT_ABORTS = 32


class Planner:
    """One vLLM engine per replica. `options`: model_path, max_model_len, block_size, kv_cache_gib, threads,
    enforce_eager, dtype (see `deployments.vllm_engine.VllmEngine`). The constructor returns once a free-text and a
    schema-constrained request went through the engine (compiled kernels, the grammar machinery warm)."""

    async def __init__(self, options: dict[str, Any], engine: Any = None) -> None:  # type: ignore[misc]  # Serve awaits it
        """`engine`: a built engine with VllmEngine's methods (tests); None builds VllmEngine from `options`."""
        if engine is None:
            engine_options = {
                k: options[k]
                for k in ("max_model_len", "block_size", "kv_cache_gib", "threads", "enforce_eager", "dtype")
                if k in options
            }
            engine = VllmEngine(options["model_path"], **engine_options)
        self._engine = engine
        self._faults = StageFaults(
            options.get("faults", ""), Path(options["faults_file"]) if options.get("faults_file") else None
        )
        self._decoded: dict[str, int] = {}
        self.counts = {
            "requests": 0,
            "finished": 0,
            "aborted": 0,
            "aborted_decoding": 0,
            "errors": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
        }
        self._aborts: deque[dict[str, Any]] = deque(maxlen=RECENT_ABORTS)
        self.ready = False
        started = time.monotonic()
        for n, schema in enumerate((None, WARMUP_SCHEMA)):
            await self._engine.complete(
                {
                    "messages": [{"role": "user", "content": "Say OK."}],
                    "json_schema": schema,
                    "max_tokens": 8,
                    "temperature": 0.0,
                    "request_id": f"warmup-{n}",
                }
            )
        self.warmup_s = time.monotonic() - started
        self.ready = True

    def reconfigure(self, user_config: dict[str, Any]) -> None:
        """user_config {"faults": "tokens=400"} (a stage-less spec applies to planner_llm)."""
        self._faults.configure(user_config.get("faults", ""), stage=STAGE)

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """The whole answer (see `deployments.vllm_engine`)."""
        return await joined(self.stream(request))

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The answer as deltas; the last one carries the finish reason and the totals."""
        request = await self._faulted(request)
        request_id = request["request_id"]
        self.counts["requests"] += 1
        self._decoded[request_id] = 0
        finished = False
        try:
            async for delta in self._engine.stream(request):
                self._decoded[request_id] = delta["completion_tokens"]
                if delta["finish_reason"] is not None:
                    finished = True
                    self._account(request_id, delta)
                yield delta
        except asyncio.CancelledError:
            self._aborted(request_id, "cancelled")
            raise
        except Exception:
            self.counts["errors"] += 1
            raise
        finally:
            if not finished and request_id in self._decoded:  # the caller stopped iterating: vLLM aborted it
                self._aborted(request_id, "closed")
            self._decoded.pop(request_id, None)

    async def abort(self, request_id: str) -> bool:
        """Abort `request_id` inside vLLM; False when it is unknown or already finished."""
        return await self._engine.abort(request_id)

    def stats(self) -> dict[str, Any]:
        return {
            **self.counts,
            "in_flight": len(self._decoded),
            "recent_aborts": list(self._aborts),
            "load_s": round(getattr(self._engine, "load_s", 0.0), 1),
            "warmup_s": round(self.warmup_s, 1),
        }

    def check_health(self) -> None:
        if not self.ready:
            raise RuntimeError("the planner's engine has not finished its warm-up")

    async def _faulted(self, request: dict[str, Any]) -> dict[str, Any]:
        fault = self._faults.current(STAGE)
        if fault is None:
            return request
        if fault.delay_ms:
            await asyncio.sleep(fault.delay_ms / 1000.0)
        if fault.error:
            raise InjectedFault(f"injected failure in {STAGE}")
        if fault.tokens:
            return {
                **request,
                "json_schema": None,
                "ignore_eos": True,
                "min_tokens": fault.tokens,
                "max_tokens": fault.tokens,
            }
        return request

    def _account(self, request_id: str, final: dict[str, Any]) -> None:
        self.counts["prompt_tokens"] += final["prompt_tokens"]
        self.counts["completion_tokens"] += final["completion_tokens"]
        if final["finish_reason"] == "abort":
            self._aborted(request_id, "abort")
        else:
            self.counts["finished"] += 1

    def _aborted(self, request_id: str, how: str) -> None:
        decoded = self._decoded.pop(request_id, 0)
        self.counts["aborted"] += 1
        self.counts["aborted_decoding"] += int(decoded > 0)
        self._aborts.append({"request_id": request_id, "how": how, "completion_tokens": decoded, "at": time.time()})
