"""Model selection on a pack's training rows only, from their out-of-fold scores (models/folds.py).

From these scores come a temperature per classifier model (least log-loss, so a probability means the same in every
pack), the n-gram share of the ensemble, the retriever's vote temperature, and the fusion settings — the retriever's
weight and the score at which a confident classifier decides the top intent — chosen by the top-1 that
`engine.fusion.fuse` itself gives on those rows, keywords included. The rows' clauses, scored by the same fold
models, choose the planner's `accept_unmarked` (models/unmarked_plans.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from config.engine import FusionConfig
from config.models import SelectionConfig
from deployments.artifacts import softmax
from engine.fusion import FusionResult, fuse, stage_debug
from engine.keyword import KeywordMatcher
from models.folds import OutOfFold
from protocol.turn_debug import Candidate, StageDebug

if TYPE_CHECKING:
    from models.unmarked_plans import UnmarkedPlans

TEMPERATURES = np.geomspace(0.05, 20.0, 121)
VOTE_TEMPERATURES = np.geomspace(0.002, 0.5, 61)
FLOOR = 1e-4  # the probability of a gold label no neighbour voted for


@dataclass(frozen=True)
class Selection:
    head: str  # "tuned": the head the encoder was tuned through; "refit": logistic regression on its vectors
    head_temperature: float
    ngram_temperature: float
    ngram_weight: float
    retriever_temperature: float
    fusion: dict[str, Any]  # FusionConfig fields this pack overrides: weights, classifier_decides_at
    planner: dict[str, Any] = field(default_factory=dict)  # PlannerConfig fields it overrides: accept_unmarked
    report: dict[str, Any] = field(default_factory=dict)


def temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """The softmax temperature with the least log-loss on these rows."""
    losses = [_nll(softmax(logits / t), y) for t in TEMPERATURES]
    return float(TEMPERATURES[int(np.argmin(losses))])


def votes(oof: OutOfFold, t: float) -> np.ndarray:
    """The retriever's per-label scores (engine: deployments.embedding_retriever) at vote temperature `t`."""
    w = np.exp((oof.sims - oof.sims[:, :1]) / t)
    w /= w.sum(1, keepdims=True)
    out = np.zeros((len(oof.y), len(oof.labels)))
    np.add.at(out, (np.repeat(np.arange(len(oof.y)), oof.sims.shape[1]), oof.neighbors.ravel()), w.ravel())
    return out


def select(
    oof: OutOfFold,
    keywords: KeywordMatcher,
    fusion: FusionConfig,
    cfg: SelectionConfig,
    *,
    top_k: int,
    plans: UnmarkedPlans | None = None,
) -> Selection:
    """`plans`: when given with `oof.clauses`, `planner.accept_unmarked` is chosen too (models/unmarked_plans.py)."""
    t_ngram = temperature(oof.ngram_logits, oof.y)
    p_ngram = softmax(oof.ngram_logits / t_ngram)
    heads = {
        name: logits for name, logits in (("tuned", oof.tuned_logits), ("refit", oof.head_logits)) if logits is not None
    }
    t_heads = {name: temperature(logits, oof.y) for name, logits in heads.items()}
    mixed = {
        (name, w): _mix(softmax(heads[name] / t_heads[name]), p_ngram, w) for name in heads for w in cfg.ngram_weights
    }
    accuracy = {key: float(np.mean(p.argmax(1) == oof.y)) for key, p in mixed.items()}
    head, ngram_weight = max(mixed, key=lambda key: (accuracy[key], -_nll(mixed[key], oof.y)))
    classifier = mixed[(head, ngram_weight)]
    vote_losses = [_nll(np.maximum(votes(oof, t), FLOOR), oof.y) for t in VOTE_TEMPERATURES]
    t_vote = float(VOTE_TEMPERATURES[int(np.argmin(vote_losses))])
    retriever = votes(oof, t_vote)

    stages = [
        _stages(text, c, r, keywords, fusion, oof.labels, top_k)
        for text, c, r in zip(oof.texts, classifier, retriever, strict=True)
    ]
    gold = [oof.labels[i] for i in oof.y]
    table = []
    for w_ret in cfg.retriever_weights:
        for decides in cfg.classifier_decides_at:
            option = fusion.model_copy(
                update={"weights": {**fusion.weights, "retriever": w_ret}, "classifier_decides_at": decides}
            )
            hits = sum(_top(fuse(s, option)) == g for s, g in zip(stages, gold, strict=True))
            table.append({"retriever_weight": w_ret, "classifier_decides_at": decides, "top1": hits / len(gold)})
    default_w = fusion.weights.get("retriever", 0.0)
    best = max(
        table, key=lambda o: (o["top1"], o["classifier_decides_at"] is None, -abs(o["retriever_weight"] - default_w))
    )
    plain = fusion.model_copy(
        update={"weights": {**fusion.weights, "retriever": best["retriever_weight"]}, "classifier_decides_at": None}
    )
    report = {
        "folds": int(oof.fold.max()) + 1,
        "rows": len(gold),
        "classifier_top1": {
            "tuned_head": float(np.mean(oof.tuned_logits.argmax(1) == oof.y)) if oof.tuned_logits is not None else None,
            "refit_head": float(np.mean(oof.head_logits.argmax(1) == oof.y)),
            "ngram": float(np.mean(p_ngram.argmax(1) == oof.y)),
            "chosen": accuracy[(head, ngram_weight)],
            "by_head_and_ngram_weight": [{"head": h, "ngram_weight": w, "top1": a} for (h, w), a in accuracy.items()],
        },
        "retriever_top1": float(np.mean(retriever.argmax(1) == oof.y)),
        "fusion_top1": best["top1"],
        "fusion_options": table,
        "confident_disagreements": _disagreements(stages, gold, plain),
    }
    planner = {}
    if plans is not None and oof.clauses is not None and cfg.accept_unmarked:
        c = oof.clauses
        c_head = {"tuned": c.tuned_logits, "refit": c.head_logits}[head]
        assert c_head is not None and c.ngram_logits is not None and c.detector is not None  # out_of_fold scored them
        c_probs = _mix(softmax(c_head / t_heads[head]), softmax(c.ngram_logits / t_ngram), ngram_weight)
        planner["accept_unmarked"], report["unmarked_plans"] = plans.choose(
            oof.texts,
            c.texts,
            c.rows,
            oof.labels,
            c_probs,
            c.detector_labels,
            c.detector,
            grid=cfg.accept_unmarked,
            max_share=cfg.max_unmarked_plans,
            top_k=top_k,
        )
    return Selection(
        head=head,
        head_temperature=t_heads[head],
        ngram_temperature=t_ngram,
        ngram_weight=ngram_weight,
        retriever_temperature=t_vote,
        fusion={
            "weights": {**fusion.weights, "retriever": best["retriever_weight"]},
            "classifier_decides_at": best["classifier_decides_at"],
        },
        planner=planner,
        report=report,
    )


def _disagreements(stages: list[dict[str, StageDebug]], gold: list[str], plain: FusionConfig) -> list[dict[str, Any]]:
    """Rows where the weighted sum's top differs from the classifier's: who was right, by the classifier's score."""
    out = []
    for s, g in zip(stages, gold, strict=True):
        clf = s["classifier"]
        top = _top(fuse(s, plain))
        if clf.selected_intent and top != clf.selected_intent:
            out.append(
                {
                    "classifier_score": round(clf.score, 3),
                    "classifier_right": clf.selected_intent == g,
                    "fusion_right": top == g,
                }
            )
    bands: list[dict[str, Any]] = []
    for lo in (0.9, 0.7, 0.5, 0.0):
        rows = [d for d in out if d["classifier_score"] >= lo and all(d is not b for b in bands)]
        bands.append(
            {
                "classifier_score_at_least": lo,
                "rows": len(rows),
                "classifier_right": sum(d["classifier_right"] for d in rows),
                "fusion_right": sum(d["fusion_right"] for d in rows),
            }
        )
        out = [d for d in out if d["classifier_score"] < lo]
    return bands


def _stages(
    text: str,
    classifier: np.ndarray,
    retriever: np.ndarray,
    keywords: KeywordMatcher,
    fusion: FusionConfig,
    labels: Sequence[str],
    top_k: int,
) -> dict[str, StageDebug]:
    """The stages as the router hands them to fusion: top-k candidates each, accepted at the configured scores."""

    def ranked(p: np.ndarray) -> list[Candidate]:
        return [Candidate(intent=labels[j], score=float(p[j])) for j in np.argsort(-p)[:top_k] if p[j] > 0]

    return {
        "keyword": stage_debug(keywords.match(text), fusion.stage_accept["keyword"]),
        "classifier": stage_debug(ranked(classifier), fusion.stage_accept["classifier"]),
        "retriever": stage_debug(ranked(retriever), fusion.stage_accept["retriever"]),
    }


def _top(result: FusionResult) -> str | None:
    return result.top.intent if result.top else None


def _mix(p_head: np.ndarray, p_ngram: np.ndarray, w: float) -> np.ndarray:
    return (1 - w) * p_head + w * p_ngram


def _nll(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, None))))
