"""Assertions shared by the deployment contract tests (imported by name: pytest puts this folder on sys.path)."""
from __future__ import annotations

import pytest

from protocol.http_chat import Candidate


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
    for b, s in zip(batch, single):
        assert [c.intent for c in b] == [c.intent for c in s]
        assert [c.score for c in b] == pytest.approx([c.score for c in s], abs=1e-4)
