"""Prometheus metrics of served turns (counts by status, per-stage latency, degradations, sheds and errors), of the
model replicas' batches (encoder passes, turns per pass) and of the language model (TTFT, TPOT, end to end, tokens,
aborts), in vLLM's vocabulary."""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess, start_http_server

from engine.llm.lm import LmReply
from engine.model_client import NLU_STAGES
from protocol.http_chat import ChatResponse
from serve_app.metrics_summary import LiveSummary

BIND_RETRY_S = 1.0
LATENCY_BUCKETS_MS = (5, 10, 20, 40, 60, 80, 100, 150, 200, 300, 400, 600, 800, 1200, 2000)


BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
LLM_BUCKETS_MS = (10, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600)


class LlmMetrics:
    """Per route (planner, reply, openai): time to first token, time per output token after it, end to end, tokens,
    and requests given up on (a deadline passed, a client left) — each one aborted inside the engine."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.ttft = Histogram(
            "baton_llm_ttft_ms",
            "Time to the first token (ms).",
            ["route"],
            buckets=LLM_BUCKETS_MS,
            registry=self.registry,
        )
        self.tpot = Histogram(
            "baton_llm_tpot_ms",
            "Time per output token after the first (ms).",
            ["route"],
            buckets=(5, 10, 20, 40, 60, 80, 100, 150, 200, 400),
            registry=self.registry,
        )
        self.e2e = Histogram(
            "baton_llm_e2e_ms",
            "Request latency in the engine, end to end (ms).",
            ["route"],
            buckets=LLM_BUCKETS_MS,
            registry=self.registry,
        )
        self.tokens = Counter(
            "baton_llm_tokens",
            "Tokens processed, by kind (prompt, completion).",
            ["route", "kind"],
            registry=self.registry,
        )
        self.requests = Counter(
            "baton_llm_requests",
            "Requests, by how they finished (stop, length, abort ...).",
            ["route", "finish_reason"],
            registry=self.registry,
        )
        self.aborts = Counter(
            "baton_llm_aborts",
            "Requests given up on before they finished (deadline, client gone); the engine aborted each.",
            ["route"],
            registry=self.registry,
        )

    def observe(self, route: str, reply: LmReply, e2e_ms: float) -> None:
        self.requests.labels(route, reply.finish_reason).inc()
        self.e2e.labels(route).observe(e2e_ms)
        self.tokens.labels(route, "prompt").inc(reply.prompt_tokens)
        self.tokens.labels(route, "completion").inc(reply.completion_tokens)
        if reply.ttft_ms is not None:
            self.ttft.labels(route).observe(reply.ttft_ms)
            if reply.completion_tokens > 1:
                self.tpot.labels(route).observe((e2e_ms - reply.ttft_ms) / (reply.completion_tokens - 1))

    def aborted(self, route: str, e2e_ms: float) -> None:
        self.aborts.labels(route).inc()
        self.requests.labels(route, "abort").inc()
        self.e2e.labels(route).observe(e2e_ms)


class ModelMetrics:
    """What one model replica did: batches and their sizes per stage; encoder passes and the turns they embedded."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.batches = Histogram(
            "baton_model_batch_size",
            "Items per batch a model replica ran.",
            ["stage"],
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )
        self.passes = Counter("baton_encoder_passes", "Encoder forward calls.", registry=self.registry)
        self.turns = Counter(
            "baton_encoder_turns", "Turns embedded by the encoder (each once).", registry=self.registry
        )


class TurnMetrics:
    """The orchestrator's metrics. `multiproc_dir`: the run's multiprocess directory (`Settings.env.metrics_dir`, set
    by the launcher for every replica of the run), where every replica writes its samples; the listener and the live
    summary then answer the sum over all of them, whichever orchestrator replica holds the port."""

    def __init__(self, registry: CollectorRegistry | None = None, *, multiproc_dir: str | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.multiproc_dir = multiproc_dir
        self.turns = Counter("baton_turns", "Turns answered, by status.", ["status"], registry=self.registry)
        self.turn_ms = Histogram(
            "baton_turn_latency_ms",
            "Server-side turn latency (ms).",
            buckets=LATENCY_BUCKETS_MS,
            registry=self.registry,
        )
        self.stage_ms = Histogram(
            "baton_stage_latency_ms",
            "Per-stage latency (ms).",
            ["stage"],
            buckets=LATENCY_BUCKETS_MS,
            registry=self.registry,
        )
        self.degraded = Counter(
            "baton_degraded_stages", "Stages that missed their budget or failed.", ["stage"], registry=self.registry
        )
        self.warmup_degraded = Gauge(
            "baton_warmup_degraded",
            "1 for a stage that answered its warm-up but missed the turn budget in the warm-up turn.",
            ["stage"],
            multiprocess_mode="max",
            registry=self.registry,
        )
        self.shed = Counter("baton_shed_turns", "Turns refused by admission control.", registry=self.registry)
        self.errors = Counter(
            "baton_errors", "Requests answered with an error envelope, by code.", ["code"], registry=self.registry
        )
        self.live = LiveSummary(self.exposed().collect, scope="all_replicas" if multiproc_dir else "process")

    def exposed(self) -> CollectorRegistry:
        """What the listener exposes: every replica's samples with a multiprocess directory, else this registry."""
        if not self.multiproc_dir:
            return self.registry
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=self.multiproc_dir)  # type: ignore[no-untyped-call]
        return registry

    def warm_up_degraded(self, degraded: tuple[str, ...]) -> None:
        """What this replica's warm-up turn degraded: 1 for those stages, 0 for the other model stages."""
        for stage in sorted({*NLU_STAGES, *degraded}):
            self.warmup_degraded.labels(stage).set(1 if stage in degraded else 0)

    def observe(self, response: ChatResponse) -> None:
        self.turns.labels(response.status.value).inc()
        self.turn_ms.observe(response.timings.total_ms)
        for stage, ms in response.timings.stages.items():
            self.stage_ms.labels(stage).observe(ms)
        for stage in response.timings.degraded:
            self.degraded.labels(stage).inc()

    def serve(self, port: int, *, host: str = "127.0.0.1", retry_s: float = BIND_RETRY_S) -> None:
        """Expose /metrics on `host` (serving.metrics_host). Only one replica of a node can hold the port: the others
        keep trying in the background, so one of them takes over when the holder goes away."""
        registry = self.exposed()

        def bind() -> None:
            while True:
                try:
                    start_http_server(port, addr=host, registry=registry)
                    return
                except OSError:
                    time.sleep(retry_s)

        threading.Thread(target=bind, name="baton-metrics", daemon=True).start()
