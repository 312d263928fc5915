"""Prometheus metrics of served turns (counts by status, per-stage latency, degradations, sheds and errors) and of the
model replicas' batches (encoder passes, turns per pass)."""
from __future__ import annotations

import os
import threading
import time

from prometheus_client import CollectorRegistry, Counter, Histogram, multiprocess, start_http_server

from protocol.http_chat import ChatResponse

BIND_RETRY_S = 1.0
# Set by the launcher for every replica of the run: each writes its samples there, and whichever orchestrator
# replica holds the port exposes the sum over all of them.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS_MS = (5, 10, 20, 40, 60, 80, 100, 150, 200, 300, 400, 600, 800, 1200, 2000)


BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)


class ModelMetrics:
    """What one model replica did: batches and their sizes per stage; encoder passes and the turns they embedded."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.batches = Histogram("baton_model_batch_size", "Items per batch a model replica ran.", ["stage"],
                                 buckets=BATCH_BUCKETS, registry=self.registry)
        self.passes = Counter("baton_encoder_passes", "Encoder forward calls.", registry=self.registry)
        self.turns = Counter("baton_encoder_turns", "Turns embedded by the encoder (each once).", registry=self.registry)


class TurnMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.turns = Counter("baton_turns", "Turns answered, by status.", ["status"], registry=self.registry)
        self.turn_ms = Histogram("baton_turn_latency_ms", "Server-side turn latency (ms).", buckets=LATENCY_BUCKETS_MS,
                                 registry=self.registry)
        self.stage_ms = Histogram("baton_stage_latency_ms", "Per-stage latency (ms).", ["stage"], buckets=LATENCY_BUCKETS_MS,
                                  registry=self.registry)
        self.degraded = Counter("baton_degraded_stages", "Stages that missed their budget or failed.", ["stage"], registry=self.registry)
        self.shed = Counter("baton_shed_turns", "Turns refused by admission control.", registry=self.registry)
        self.errors = Counter("baton_errors", "Requests answered with an error envelope, by code.", ["code"], registry=self.registry)

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
        registry = self.registry
        if os.environ.get(MULTIPROC_ENV):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)

        def bind() -> None:
            while True:
                try:
                    start_http_server(port, addr=host, registry=registry)
                    return
                except OSError:
                    time.sleep(retry_s)

        threading.Thread(target=bind, name="baton-metrics", daemon=True).start()
