"""The one replica body of every model deployment (NLU, encoder, heads, ASR, OCR): a plain class, bound in the builder.

Each request carries its stage deadline (epoch seconds): work that can no longer finish is dropped before it
starts, queued work is checked again before its batch runs, and a batch nobody waits for any more is stopped.
Fault injection (`BATON_FAULTS` and the run's faults file, from the settings, or `user_config: {faults: ...}` flipped at
run time) delays or fails stages.
The constructor returns only once the replica's own models answered a warm-up through this same path.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from config.settings import Settings
from deployments.embedding import RunControl
from deployments.faults import FaultFile, FaultSet, InjectedFault
from engine.model_client import HEADS
from serve_app.args import AppArgs
from serve_app.metrics import ModelMetrics
from serve_app.replicas.batching import DeadlineExpired, MicroBatcher
from serve_app.replicas.work import WORKS, Work

WARMUP_DEADLINE_S = 120.0


class ReplicaBody:
    """Deadline drop, fault injection, batching and counters around one `Work`; no Ray needed."""

    def __init__(
        self,
        work: Work,
        *,
        max_wait_s: float,
        max_concurrent: int,
        env_faults: str = "",
        faults_file: Path | None = None,
        metrics: ModelMetrics | None = None,
    ) -> None:
        self.work = work
        self._metrics = metrics
        self._env_faults = env_faults
        self._faults = FaultSet.parse(env_faults)
        self._configured: dict = {}
        self._from_file: dict = {}
        self._file = FaultFile(faults_file)
        self._batcher = MicroBatcher(
            self._run,
            max_batch_size=work.max_batch_size,
            max_wait_s=max_wait_s,
            max_concurrent=max_concurrent,
            name=work.stage,
        )
        self._max_concurrent = max_concurrent
        self.counts = {"calls": 0, "expired": 0}
        self.ready = False

    def _run(self, items: list[Any], control: RunControl) -> list[Any]:
        before = self.work.counters()
        results = self.work.run(items, control, self._faults.failing(self.work.stages))
        if self._metrics is not None and self.ready:  # the warm-up is not served work
            after = self.work.counters()
            self._metrics.batches.labels(self.work.stage).observe(len(items))
            self._metrics.passes.inc(after.get("passes", 0) - before.get("passes", 0))
            self._metrics.turns.inc(after.get("turns", 0) - before.get("turns", 0))
        return results

    async def warm_up(self) -> None:
        """The models' own warm-up on every batch thread, then the warm-up items through the whole path."""
        import asyncio

        await asyncio.gather(*(self._batcher.on_worker(self.work.warmup) for _ in range(self._max_concurrent)))
        deadline = time.time() + WARMUP_DEADLINE_S
        for item in self.work.warmup_items:
            await self._batcher.submit(item, deadline)
        self._batcher.warmed()
        self.ready = True

    def reconfigure(self, user_config: dict) -> None:
        """user_config {"faults": "delay_ms=800"} (a stage-less spec applies to this replica's stage)."""
        self._configured = FaultSet.parse(user_config.get("faults", ""), stage=self.work.stage).faults
        self._merge()

    def _merge(self) -> None:
        env = FaultSet.parse(self._env_faults).faults
        self._faults = FaultSet({**env, **self._configured, **self._from_file}, self._faults.cancelled)

    async def call(self, item: Any, deadline: float) -> Any:
        self.counts["calls"] += 1
        from_file = self._file.changed()
        if from_file is not None:
            self._from_file = from_file
            self._merge()
        if time.time() >= deadline:
            self.counts["expired"] += 1
            raise DeadlineExpired(f"{self.work.stage}: the deadline passed before the work started")
        await self._faults.delay(self.work.stages)
        failing = self._faults.failing(self.work.stages)
        if failing and not self.work.partial_failures:
            raise InjectedFault(f"injected failure in {', '.join(sorted(failing))}")
        return await self._batcher.submit(item, deadline)

    def stats(self) -> dict[str, Any]:
        return {
            **self.counts,
            **{f"batch_{k}": v for k, v in self._batcher.stats.items()},
            "cancelled": self._faults.cancelled,
            **self.work.counters(),
        }


async def warm_body(kind: str, settings: Settings) -> ReplicaBody:
    """The replica body of a model of kind `kind` (a key of `serve_app.replicas.work.WORKS`), its models loaded and
    warmed up through the whole path: what a model deployment's replica runs, and, in the `inline` layout, what the
    Orchestrator runs itself."""
    work = WORKS[kind](settings)
    budget_s = settings.budgets.stage_s(work.stage)
    body = ReplicaBody(
        work,
        max_wait_s=budget_s * settings.budgets.batch_wait_share,
        max_concurrent=settings.models.max_concurrent_batches if work.max_batch_size > 1 else 1,
        env_faults=settings.env.faults,
        faults_file=settings.env.faults_file,
        metrics=ModelMetrics(),
    )
    await body.warm_up()
    return body


class ModelReplica:
    """A model deployment of kind `kind` (a key of `serve_app.replicas.work.WORKS`)."""

    async def __init__(self, kind: str, args: dict[str, Any]) -> None:  # type: ignore[misc]  # Serve awaits it
        self._pairs = kind in HEADS  # a head's item travels with the vectors it reads
        self._body = await warm_body(kind, AppArgs.model_validate(args).settings())

    def reconfigure(self, user_config: dict) -> None:
        self._body.reconfigure(user_config)

    async def __call__(self, item: Any, deadline: float, vectors: Any = None) -> Any:
        """`vectors`: a head's input, the Encoder's response passed through by the orchestrator (resolved by Serve)."""
        return await self._body.call((vectors, item) if self._pairs else item, deadline)

    async def stats(self) -> dict[str, Any]:
        """This replica's counters; `pid` tells replicas apart, since a handle reaches one of them per call."""
        return {**self._body.stats(), "pid": os.getpid()}

    def check_health(self) -> None:
        """This replica's own state only: another deployment still loading must not get it restarted."""
        if not self._body.ready:
            raise RuntimeError(f"{self._body.work.stage} replica has not finished its warm-up")
