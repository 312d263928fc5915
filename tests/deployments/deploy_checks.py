"""Texts and assertions shared by the deployment contract tests."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from protocol.turn_debug import Candidate

# Own phrasings (none copied from the pack), each naming one cockpit intent plainly.
CLEAR = {
    "打开车窗": "cabin_window_open",
    "把空调调到22度": "cabin_set_ac",
    "我想听点周杰伦的歌": "cabin_play_music",
    "我买的东西快递现在到哪儿了": "cs_query_logistics",
    "座椅加热帮我关掉吧": "cabin_seat_heat_off",
    "导航去最近的加油站": "cabin_nav_to",
}


def assert_ranked(cands: list[Candidate], *, top_k: int) -> None:
    """At most top_k candidates, distinct intents, scores in [0, 1] (float32 rounding aside), sorted descending."""
    assert 0 < len(cands) <= top_k
    intents = [c.intent for c in cands]
    assert len(set(intents)) == len(intents), intents
    scores = [c.score for c in cands]
    assert all(0.0 <= s <= 1.0 + 1e-6 for s in scores), scores
    assert scores == sorted(scores, reverse=True), scores


def assert_same_results(batch: list[list[Candidate]], single: list[list[Candidate]]) -> None:
    """Batched and one-by-one calls rank the same intents with the same scores (up to float noise from padding)."""
    assert len(batch) == len(single)
    for b, s in zip(batch, single, strict=True):
        assert [c.intent for c in b] == [c.intent for c in s]
        assert [c.score for c in b] == pytest.approx([c.score for c in s], abs=1e-4)


@cache
def shared_encoder(path: str, runtime: str, threads: int):
    """The real shared encoder, loaded once per test session and configuration."""
    from deployments.encoder import Encoder
    from tests.support.packs import settings_for

    settings = settings_for("cockpit")
    cfg = settings.models.model_copy(update={"encoder_runtime": runtime, "threads": threads})
    return Encoder(path=Path(path), cfg=cfg, state_dir=settings.state_dir)


def encoder_of(settings):
    """The encoder the pack's heads were built on (its tuned one), as the NLU replica loads it."""
    from deployments.artifacts import encoder_for

    m = settings.models
    return shared_encoder(
        str(encoder_for(settings.artifacts_dir(), settings.encoder_path)), m.encoder_runtime, m.threads
    )


class FedHead:
    """A head fed as the NLU replica feeds it, texts in: each text (and, for the detector, its clauses)
    embedded by the shared encoder in one pass, then the head on those vectors."""

    def __init__(self, head, settings) -> None:
        from engine.clauses import ClauseSplitter

        self.head = head
        self._encoder = encoder_of(settings)
        self._clauses = ClauseSplitter(settings.clauses)

    @property
    def labels(self):
        return self.head.labels

    def _firsts(self, texts):
        return np.stack([v[0] for v in self._encoder.encode([[t] for t in texts])]) if texts else np.zeros((0, 384))

    def classify_batch(self, texts):
        return self.head.classify(texts, self._firsts(texts) if self.head.needs_vectors else None)

    def retrieve_batch(self, texts):
        return self.head.retrieve(self._firsts(texts))

    def detect_batch(self, texts):
        return [
            text for text, _ in self.head.detect(self._encoder.encode([[t, *self._clauses.extra(t)] for t in texts]))
        ]

    def detect_clauses(self, text):
        """Each clause's own labels (the planner reads them)."""
        return self.head.detect(self._encoder.encode([[text, *self._clauses.extra(text)]]))[0][1]
