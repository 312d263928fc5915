"""Replica body shared by the model deployments: deadline drop, fault injection, and batching via @serve.batch."""
from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from ray import serve

from deployments.embedding_retriever import EmbeddingRetriever
from deployments.faults import FaultSet
from deployments.intent_classifier import IntentClassifier
from deployments.multi_intent_detector import MultiIntentDetector
from protocol.http_chat import Candidate
from serve_app.app_args import AppArgs


class DeadlineExpired(Exception):
    """The turn's deadline passed before this replica started the work; computing it would be wasted."""


def _build_model(stage: str, args: AppArgs):
    settings = args.settings()
    common = dict(artifacts=settings.artifacts_dir(), encoder=settings.encoder_path, cfg=settings.models, top_k=settings.top_k)
    builders: dict[str, Callable[[], object]] = {
        "classifier": lambda: IntentClassifier(**common),
        "detector": lambda: MultiIntentDetector(**common, detector=settings.detector),
        "retriever": lambda: EmbeddingRetriever(**common),
    }
    model = builders[stage]()
    predict = {"classifier": "classify_batch", "detector": "detect_batch", "retriever": "retrieve_batch"}[stage]
    return model, getattr(model, predict), settings


class ModelServer:
    def __init__(self, stage: str, args: dict) -> None:
        self._stage = stage
        model, self._predict, settings = _build_model(stage, AppArgs.model_validate(args))
        model.warmup()
        self._env_faults = os.environ.get("BATON_FAULTS", "")
        self._faults = FaultSet.parse(self._env_faults)
        self._batched.set_max_batch_size(settings.models.max_batch_size)
        self._batched.set_batch_wait_timeout_s(settings.budgets.stage_s(stage) * settings.budgets.batch_wait_share)
        self._counts = {"calls": 0, "expired": 0}

    def reconfigure(self, user_config: dict) -> None:
        """user_config {"faults": "delay_ms=800"} flips fault injection without restarting the replica."""
        cancelled = self._faults.cancelled
        env = FaultSet.parse(self._env_faults).faults
        self._faults = FaultSet({**env, **FaultSet.parse(user_config.get("faults", ""), stage=self._stage).faults}, cancelled)

    async def __call__(self, text: str, deadline: float) -> list[Candidate]:
        self._counts["calls"] += 1
        if time.time() >= deadline:
            self._counts["expired"] += 1
            raise DeadlineExpired(f"{self._stage}: deadline passed before work started")
        await self._faults.apply(self._stage)
        return await self._batched(text)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def _batched(self, texts: list[str]) -> list[list[Candidate]]:
        # model code is CPU-bound: keep the replica's event loop free to accept and cancel requests
        return await asyncio.to_thread(self._predict, texts)

    def stats(self) -> dict[str, int]:
        return {**self._counts, "cancelled": self._faults.cancelled}
