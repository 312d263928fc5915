"""The routing step of a turn: one encoder pass feeding classifier ∥ retriever ∥ detector, keywords meanwhile,
then fusion."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from config.settings import Settings
from engine.clauses import ClauseSplitter
from engine.deadline import Deadline
from engine.fusion import FusionResult, fuse, stage_debug
from engine.keyword import KeywordMatcher
from engine.model_client import ENCODER, HEADS, ModelClient, NluCall, NluRequest, StageError
from engine.pack import SPECIAL_INTENTS, Rules
from engine.polarity import Polarity
from protocol.turn_debug import Candidate, StageDebug

MATCHERS = ("classifier", "retriever")


@dataclass
class Route:
    stages: dict[str, StageDebug]
    detector: StageDebug
    fusion: FusionResult
    detected: list[Candidate]
    clauses: tuple[str, ...] = ()
    # per head (classifier, detector) its candidates for each clause, in the order of `clauses`
    clause_scores: dict[str, tuple[list[Candidate], ...]] = field(default_factory=dict)
    vector: tuple[float, ...] | None = None  # the text's embedding from the turn's one encoder pass

    @property
    def multi_intent(self) -> bool:
        return len(self.detected) >= 2


class Router:
    def __init__(
        self,
        *,
        settings: Settings,
        keywords: KeywordMatcher,
        models: ModelClient,
        clauses: ClauseSplitter,
        polarity: Polarity | None = None,
    ) -> None:
        self._settings = settings
        self._polarity = polarity or Polarity(Rules())
        self._keywords = keywords
        self._models = models
        self._clauses = clauses

    async def route(self, text: str, deadline: Deadline) -> Route:
        """One model call per turn; a late or failed stage degrades instead of failing the turn.

        The encoder gets min(its budget, time left); each head its own budget after that. When the encoder
        misses, the call is cancelled at once and every head that needed its vectors degrades with it.
        """
        budgets = self._settings.budgets
        extra = self._clauses.extra(text)
        encoder_at = deadline.stage_at(budgets.stage_s(ENCODER))
        deadlines = {ENCODER: encoder_at, **{h: deadline.stage_at(budgets.stage_s(h), after=encoder_at) for h in HEADS}}
        started = time.time()
        call = self._models.understand(NluRequest(text=text, clauses=extra, deadlines=deadlines))
        try:
            with deadline.measure("keyword"):
                keyword_hits = self._keywords.match(text)
            clause_scores: dict[str, tuple[list[Candidate], ...]] = {}
            vector: list[tuple[float, ...]] = []
            encoder = await self._outcome(call, ENCODER, deadlines[ENCODER], started, deadline, clause_scores, vector)
            if encoder.degraded:
                call.cancel()
            heads = await asyncio.gather(
                *(self._outcome(call, h, deadlines[h], started, deadline, clause_scores) for h in HEADS)
            )
        finally:
            call.cancel()
        results = dict(zip(HEADS, heads, strict=True))

        cfg = self._settings.fusion
        stages = {
            "keyword": stage_debug(keyword_hits, cfg.stage_accept["keyword"], deadline.stages_ms["keyword"]),
            ENCODER: encoder,
        }
        for name in MATCHERS:
            stages[name] = results[name]
        with deadline.measure("fusion"):
            fusion = self._polarity.read(text, fuse(stages, cfg))

        detector, det = results["detector"], self._settings.detector
        need = det.threshold if extra else det.single_clause_threshold
        detected = (
            []
            if detector.degraded
            else self._polarity.one_side(
                [c for c in detector.candidates if c.score >= need and c.intent not in SPECIAL_INTENTS]
            )[: det.max_labels]
        )
        return Route(
            stages=stages,
            detector=detector,
            fusion=fusion,
            detected=detected,
            clauses=extra,
            clause_scores=clause_scores,
            vector=vector[0] if vector else None,
        )

    async def _outcome(
        self,
        call: NluCall,
        stage: str,
        at: float,
        started: float,
        deadline: Deadline,
        clause_scores: dict[str, tuple[list[Candidate], ...]],
        vector: list[tuple[float, ...]] | None = None,
    ) -> StageDebug:
        accept_at = self._settings.fusion.stage_accept.get(stage, self._settings.detector.threshold)
        waited_from = time.time()
        try:
            try:
                outcome = await asyncio.wait_for(call.outcome(stage), max(0.0, at - waited_from))
            except asyncio.CancelledError as exc:
                task = asyncio.current_task()
                assert task is not None  # awaited inside the turn's task
                if task.cancelling():
                    raise  # the turn itself is being cancelled
                raise StageError(stage, "cancelled") from exc
        except (TimeoutError, StageError) as exc:
            deadline.record(stage, started if stage == ENCODER else waited_from, time.time())
            deadline.degrade(stage)
            error = f"{stage} exceeded its deadline" if isinstance(exc, TimeoutError) else str(exc)
            return StageDebug(degraded=True, error=error, latency_ms=deadline.stages_ms.get(stage, 0.0))
        deadline.record(stage, outcome.started or started, outcome.finished or time.time())
        if outcome.clauses:
            clause_scores[stage] = outcome.clauses
        if vector is not None and outcome.vector is not None:
            vector.append(outcome.vector)
        debug = stage_debug(outcome.candidates, accept_at, deadline.stages_ms.get(stage, 0.0))
        if outcome.partial:
            deadline.degrade(stage)
            return debug.model_copy(
                update={"degraded": True, "partial": True, "accepted": False, "error": outcome.partial}
            )
        return debug
