"""The routing step of a turn: keyword ∥ classifier ∥ retriever ∥ detector under the deadline, then fusion."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from engine.deadline import Deadline, StageTimeout
from engine.fusion import FusionResult, fuse, stage_debug
from engine.keyword import KeywordMatcher
from engine.model_client import ModelClient, StageError
from engine.pack import SPECIAL_INTENTS
from engine.settings import Settings
from protocol.http_chat import Candidate, StageDebug

MATCHERS = ("classifier", "retriever")


@dataclass
class Route:
    stages: dict[str, StageDebug]
    detector: StageDebug
    fusion: FusionResult
    detected: list[Candidate]

    @property
    def multi_intent(self) -> bool:
        return len(self.detected) >= 2


class Router:
    def __init__(self, *, settings: Settings, keywords: KeywordMatcher, models: ModelClient) -> None:
        self._settings = settings
        self._keywords = keywords
        self._models = models

    async def route(self, text: str, deadline: Deadline) -> Route:
        """Run the matchers and the detector in parallel; a late or failed stage degrades instead of failing the turn."""
        cfg, budgets = self._settings.fusion, self._settings.budgets
        calls: dict[str, Callable[[], Awaitable[list[Candidate]]]] = {
            "classifier": lambda: self._models.classify(text, deadline=deadline.at),
            "retriever": lambda: self._models.retrieve(text, deadline=deadline.at),
            "detector": lambda: self._models.detect(text, deadline=deadline.at),
        }
        pending = {name: asyncio.ensure_future(self._bounded(name, call, deadline)) for name, call in calls.items()}

        t0 = time.perf_counter()
        keyword_hits = self._keywords.match(text)
        deadline.stages_ms["keyword"] = round((time.perf_counter() - t0) * 1000.0, 3)

        results = dict(zip(pending, await asyncio.gather(*pending.values())))
        stages = {"keyword": stage_debug(keyword_hits, cfg.stage_accept["keyword"], deadline.stages_ms["keyword"])}
        for name in MATCHERS:
            stages[name] = results[name]

        t0 = time.perf_counter()
        fusion = fuse(stages, cfg)
        deadline.stages_ms["fusion"] = round((time.perf_counter() - t0) * 1000.0, 3)

        detector = results["detector"]
        det = self._settings.detector
        need = det.threshold if len(det.clauses(text)) > 1 else det.single_clause_threshold
        detected = [] if detector.degraded else [
            c for c in detector.candidates if c.score >= need and c.intent not in SPECIAL_INTENTS
        ][: det.max_labels]
        return Route(stages=stages, detector=detector, fusion=fusion, detected=detected)

    async def _bounded(self, name: str, call: Callable[[], Awaitable[list[Candidate]]], deadline: Deadline) -> StageDebug:
        accept_at = self._settings.fusion.stage_accept.get(name, self._settings.detector.threshold)
        try:
            candidates = await deadline.run(name, self._settings.budgets.stage_s(name), call)
        except (StageTimeout, StageError) as exc:
            deadline.degrade(name)
            return StageDebug(degraded=True, error=str(exc), latency_ms=deadline.stages_ms.get(name, 0.0))
        return stage_debug(candidates, accept_at, deadline.stages_ms.get(name, 0.0))
