"""Contract tests for deployments.embedding_retriever over the real built cockpit index (no fakes)."""

from __future__ import annotations

import json

import pytest

from deployments.artifacts import RETRIEVER_ROWS
from deployments.embedding_retriever import EmbeddingRetriever
from tests.deployments.deploy_checks import CLEAR, FedHead, assert_ranked, assert_same_results

MIXED = ["打开车窗", "我想听点周杰伦的歌", "今天晚上吃什么好", "你好", "把空调调到22度", "后视镜收一下", "嗯"]


def make(settings, top_k: int) -> FedHead:
    return FedHead(
        EmbeddingRetriever(artifacts=settings.artifacts_dir("cockpit"), cfg=settings.models, top_k=top_k), settings
    )


@pytest.fixture(scope="module")
def retriever(cockpit):
    """top_k = the neighbour count: every intent that got a vote comes back, so nothing is cut off."""
    _, settings = cockpit
    return make(settings, settings.models.retriever_neighbors)


@pytest.fixture(scope="module")
def short_retriever(cockpit):
    _, settings = cockpit
    return make(settings, 2)


@pytest.fixture(scope="module")
def train_intents(cockpit) -> set[str]:
    _, settings = cockpit
    return {
        r["intent"]
        for r in json.loads((settings.artifacts_dir("cockpit") / RETRIEVER_ROWS).read_text(encoding="utf-8"))
    }


def test_votes_form_a_distribution(retriever, cockpit, train_intents):
    """Neighbour weights are a softmax summed per intent: with every voted intent returned they sum to 1."""
    _, settings = cockpit
    for text, cands in zip(MIXED, retriever.retrieve_batch(MIXED), strict=True):
        assert_ranked(cands, top_k=settings.models.retriever_neighbors)
        assert {c.intent for c in cands} <= train_intents
        assert all(c.score > 0 for c in cands), text
        assert sum(c.score for c in cands) == pytest.approx(1.0, abs=1e-5), text


def test_top_k_cuts_without_renormalising(retriever, short_retriever):
    """A cut-off ranking keeps the full distribution's scores (sum <= 1), so fusion compares like with like."""
    full, short = retriever.retrieve_batch(MIXED), short_retriever.retrieve_batch(MIXED)
    for text, f, s in zip(MIXED, full, short, strict=True):
        assert_ranked(s, top_k=2)
        assert len(s) == min(2, len(f)), text
        assert [c.intent for c in s] == [c.intent for c in f[: len(s)]], text
        assert [c.score for c in s] == pytest.approx([c.score for c in f[: len(s)]], abs=1e-6), text
        assert sum(c.score for c in s) <= 1.0 + 1e-6


def test_nearest_intent_for_clear_commands(retriever):
    got = {t: c[0].intent for t, c in zip(CLEAR, retriever.retrieve_batch(list(CLEAR)), strict=True)}
    assert got == CLEAR


def test_a_training_example_retrieves_its_own_intent_confidently(retriever):
    (cands,) = retriever.retrieve_batch(["打开车窗"])  # a training row: its own neighbour at similarity ~1
    assert cands[0].intent == "cabin_window_open"
    assert cands[0].score > 0.5


def test_batch_matches_one_by_one(retriever):
    batch = retriever.retrieve_batch(MIXED)
    assert len(batch) == len(MIXED)
    assert_same_results(batch, [retriever.retrieve_batch([t])[0] for t in MIXED])
