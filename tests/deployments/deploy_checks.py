"""Texts and assertions shared by the deployment contract tests (imported by name: pytest puts this folder on sys.path)."""
from __future__ import annotations

import pytest

from protocol.http_chat import Candidate

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
    for b, s in zip(batch, single):
        assert [c.intent for c in b] == [c.intent for c in s]
        assert [c.score for c in b] == pytest.approx([c.score for c in s], abs=1e-4)
