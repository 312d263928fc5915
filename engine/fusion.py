"""Weighted fusion of matcher stages and the execute / clarify / route_to_cloud / reject decision
(seed 003 §12.4–12.6)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from config.engine import FusionConfig
from protocol.turn_debug import Candidate, FusionDebug, StageDebug


class RouteDecision(StrEnum):
    execute = "execute"
    clarify = "clarify"
    route_to_cloud = "route_to_cloud"
    reject = "reject"


@dataclass(frozen=True)
class FusionResult:
    decision: RouteDecision
    reason: str
    ranked: list[Candidate]

    @property
    def top(self) -> Candidate | None:
        return self.ranked[0] if self.ranked else None

    def settled(self, intent: str, why: str) -> FusionResult:
        """Executed as `intent`, which moves to the top at the top's score."""
        top = self.ranked[0].score if self.ranked else 0.0
        ranked = [Candidate(intent=intent, score=top), *(c for c in self.ranked if c.intent != intent)]
        return FusionResult(decision=RouteDecision.execute, reason=f"{self.reason}; {why}", ranked=ranked)

    def debug(self) -> FusionDebug:
        top = self.ranked[0].score if self.ranked else 0.0
        second = self.ranked[1].score if len(self.ranked) > 1 else 0.0
        return FusionDebug(
            decision=self.decision.value,
            reason=self.reason,
            top_score=round(top, 4),
            margin=round(top - second, 4),
            ranked=self.ranked[:5],
        )


def stage_debug(candidates: list[Candidate], accept_at: float, latency_ms: float = 0.0) -> StageDebug:
    top = candidates[0] if candidates else None
    return StageDebug(
        accepted=bool(top and top.score >= accept_at),
        selected_intent=top.intent if top else None,
        score=round(top.score, 4) if top else 0.0,
        candidates=[Candidate(intent=c.intent, score=round(c.score, 4)) for c in candidates],
        latency_ms=latency_ms,
    )


def fuse(stages: dict[str, StageDebug], cfg: FusionConfig) -> FusionResult:
    """Sum weighted stage scores per intent (plus a bonus where the stage accepted it) and decide."""
    scores: dict[str, float] = {}
    support: dict[str, list[str]] = {}
    for name, stage in stages.items():
        if stage.degraded and not stage.partial:
            continue  # a partial answer (e.g. the n-gram model without the encoder) still counts, at its weight
        weight = cfg.weights.get(name, 0.0)
        for cand in stage.candidates:
            scores[cand.intent] = scores.get(cand.intent, 0.0) + weight * cand.score
        if stage.accepted and stage.selected_intent and not stage.degraded:
            scores[stage.selected_intent] = scores.get(stage.selected_intent, 0.0) + cfg.accepted_bonus
            support.setdefault(stage.selected_intent, []).append(name)
    ranked = [Candidate(intent=i, score=round(s, 4)) for i, s in sorted(scores.items(), key=lambda kv: -kv[1])]
    if not ranked:
        return FusionResult(RouteDecision.reject, "no stage produced a candidate", ranked)
    decided = _classifier_decides(stages.get("classifier"), cfg)
    if decided and ranked[0].intent != decided:
        # measured on held-out folds (models/selection.py): above this score the classifier is right more often
        # than the retriever or keywords that outweigh it
        ranked.sort(key=lambda c: c.intent != decided)

    top, margin = ranked[0], ranked[0].score - (ranked[1].score if len(ranked) > 1 else 0.0)
    backers = support.get(top.intent, [])
    classifier = stages.get("classifier")
    classifier_sure = bool(
        classifier
        and not classifier.degraded
        and classifier.selected_intent == top.intent
        and classifier.score >= cfg.classifier_execute_score
        and _stage_margin(classifier) >= cfg.classifier_execute_margin
    )
    if top.score >= cfg.execute_threshold and (len(backers) >= 2 or "keyword" in backers or classifier_sure):
        return FusionResult(
            RouteDecision.execute,
            f"score {top.score:.2f} ≥ {cfg.execute_threshold}, backed by {'+'.join(backers) or 'classifier'}",
            ranked,
        )
    if classifier_sure and classifier is not None:
        return FusionResult(
            RouteDecision.execute,
            f"classifier confident ({classifier.score:.2f}, margin {_stage_margin(classifier):.2f})",
            ranked,
        )
    if top.score >= cfg.route_to_cloud_threshold:
        if margin < cfg.clarify_margin and len(ranked) > 1:
            return FusionResult(RouteDecision.clarify, f"top two within {margin:.2f} < {cfg.clarify_margin}", ranked)
        return FusionResult(
            RouteDecision.route_to_cloud, f"score {top.score:.2f} looks known but below {cfg.execute_threshold}", ranked
        )
    return FusionResult(RouteDecision.reject, f"score {top.score:.2f} < {cfg.route_to_cloud_threshold}", ranked)


def _classifier_decides(classifier: StageDebug | None, cfg: FusionConfig) -> str | None:
    if cfg.classifier_decides_at is None or classifier is None or classifier.degraded:
        return None
    return classifier.selected_intent if classifier.score >= cfg.classifier_decides_at else None


def _stage_margin(stage: StageDebug) -> float:
    c = stage.candidates
    return c[0].score - (c[1].score if len(c) > 1 else 0.0) if c else 0.0
