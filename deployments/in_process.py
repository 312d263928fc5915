"""In-process implementation of the engine's ModelClient: the same model classes called in a thread pool (the monolith path)."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from deployments.embedding_retriever import EmbeddingRetriever
from deployments.faults import FaultSet
from deployments.intent_classifier import IntentClassifier
from deployments.multi_intent_detector import MultiIntentDetector
from engine.model_client import ModelClient, StageError
from engine.settings import Settings
from protocol.http_chat import Candidate


class InProcessModels(ModelClient):
    """Runs each model on a worker thread so the event loop stays free; faults apply as they would in a replica."""

    def __init__(self, settings: Settings, *, faults: FaultSet | None = None, workers: int = 3) -> None:
        kwargs = dict(artifacts=settings.artifacts_dir(), encoder=settings.encoder_path, cfg=settings.models, top_k=settings.top_k)
        self.classifier = IntentClassifier(**kwargs)
        self.detector = MultiIntentDetector(**kwargs, detector=settings.detector)
        self.retriever = EmbeddingRetriever(**kwargs)
        self._faults = faults or FaultSet()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="baton-model")

    async def _run(self, stage: str, fn, text: str) -> list[Candidate]:
        try:
            await self._faults.apply(stage)
            return (await asyncio.get_running_loop().run_in_executor(self._pool, fn, [text]))[0]
        except Exception as exc:  # a model failure degrades the stage, it never fails the turn
            raise StageError(stage, repr(exc)) from exc

    async def classify(self, text: str, *, deadline: float) -> list[Candidate]:
        return await self._run("classifier", self.classifier.classify_batch, text)

    async def detect(self, text: str, *, deadline: float) -> list[Candidate]:
        return await self._run("detector", self.detector.detect_batch, text)

    async def retrieve(self, text: str, *, deadline: float) -> list[Candidate]:
        return await self._run("retriever", self.retriever.retrieve_batch, text)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
