"""Held-out figures of a built pack: the classifier alone and fusion's top-1 (the intent a turn answers with), each
from models that never saw the rows scored, with the remaining errors grouped by (expected, answered)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from config.settings import Settings
from deployments import artifacts as layout
from engine.fusion import fuse, stage_debug
from engine.keyword import KeywordMatcher
from engine.pack import Pack

if TYPE_CHECKING:
    from protocol.turn_debug import Candidate

BATCH = 32


def evaluated_artifacts(pack: Pack, settings: Settings) -> Path:
    """The models that never saw the pack's test split: the served ones, or for a pack served on all its rows the
    ones built on its training split alone."""
    out = settings.artifacts_dir(pack.name)
    return layout.heldout_dir(out) if pack.serve_on == "all_rows" else out


def held_out(pack: Pack, settings: Settings, rows: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Top-1 of the classifier and of fusion (keywords, classifier, retriever, as the router composes them) on the
    pack's test split (or `rows`), and the most frequent errors."""
    from deployments.nlu import NluItem, build_nlu

    rows = pack.test_rows() if rows is None else rows
    artifacts = evaluated_artifacts(pack, settings)
    served = layout.served_settings(settings, artifacts)
    nlu = build_nlu(served, artifacts=artifacts)
    keywords, accept = KeywordMatcher(pack), served.fusion.stage_accept
    answers = []
    for start in range(0, len(rows), BATCH):
        answers += nlu.analyze([NluItem(text) for text, _ in rows[start : start + BATCH]])
    classifier_hits, fusion_hits = 0, 0
    errors: Counter[tuple[str, str | None]] = Counter()
    for (text, gold), answer in zip(rows, answers, strict=True):
        stages = {"keyword": stage_debug(keywords.match(text), accept["keyword"])}
        for name in ("classifier", "retriever"):
            stages[name] = stage_debug([_candidate(i, s) for i, s in answer.scores.get(name, [])], accept[name])
        top = fuse(stages, served.fusion).top
        answered = top.intent if top else None
        classifier_hits += stages["classifier"].selected_intent == gold
        fusion_hits += answered == gold
        if answered != gold:
            errors[(gold, answered)] += 1
    n = max(1, len(rows))
    return {
        "rows": len(rows),
        "classifier_top1": round(classifier_hits / n, 4),
        "fusion_top1": round(fusion_hits / n, 4),
        "errors": [{"expected": g, "answered": a, "rows": k} for (g, a), k in errors.most_common()],
    }


def _candidate(intent: str, score: float) -> Candidate:
    from protocol.turn_debug import Candidate

    return Candidate(intent=intent, score=score)


def confusion_summary(errors: list[dict[str, Any]], limit: int = 5) -> str:
    """`gold → answered ×n` for the most frequent errors."""
    return "; ".join(f"{e['expected']} → {e['answered']} ×{e['rows']}" for e in errors[:limit]) or "none"
