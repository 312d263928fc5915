"""The NLU composition on the real models: one encoder pass per batch, heads on its vectors, declared degradations."""

from __future__ import annotations

import pytest

from deployments.nlu import NluItem, build_nlu
from tests.deployments.deploy_checks import CLEAR

ITEMS = [NluItem(text) for text in CLEAR] + [NluItem("打开车窗然后播放音乐", ("打开车窗", "播放音乐"))]


@pytest.fixture(scope="module")
def nlu(cockpit):
    _, settings = cockpit
    return build_nlu(settings)


def test_a_batch_of_turns_is_one_encoder_pass_and_every_head_answers(nlu):
    before = dict(nlu.encoder.counts)
    answers = nlu.analyze(ITEMS)
    assert nlu.encoder.counts["passes"] - before["passes"] == 1
    assert nlu.encoder.counts["turns"] - before["turns"] == len(ITEMS)
    assert nlu.encoder.counts["texts"] - before["texts"] == len(ITEMS) + 2  # the clauses ride in the same pass
    for answer, gold in zip(answers, CLEAR.values(), strict=False):
        assert answer.errors == {} and answer.partial == {}
        assert answer.scores["classifier"][0][0] == gold and answer.scores["retriever"][0][0] == gold
        assert set(answer.ms) == {"encoder", "classifier", "detector", "retriever"}
    pair = {i for i, s in answers[-1].scores["detector"][:2]}
    assert pair == {"cabin_window_open", "cabin_play_music"}


def test_the_split_parts_answer_what_the_fused_model_answers(nlu):
    fused = nlu.analyze(ITEMS)
    vectors = nlu.encode(ITEMS)
    for head in ("classifier", "detector", "retriever"):
        split = nlu.head(head, ITEMS, vectors)
        for f, s in zip(fused, split, strict=True):
            assert [i for i, _ in f.scores[head]] == [i for i, _ in s.text]
            assert [[i for i, _ in c] for c in f.clauses.get(head, ())] == [[i for i, _ in c] for c in s.clauses]


def test_each_answer_carries_its_texts_vector_from_the_same_pass(nlu):
    """Semantic memory keeps this vector with the logged message: no second encoder pass."""
    import numpy as np

    fused = nlu.analyze(ITEMS)
    vectors = nlu.encode(ITEMS)
    for answer, rows in zip(fused, vectors, strict=True):
        assert len(answer.vector) == rows.shape[1]
        assert np.allclose(answer.vector, rows[0], atol=1e-5)
    (failed,) = nlu.analyze([NluItem("打开车窗")], fail={"encoder"})
    assert failed.vector is None


def test_without_the_encoder_the_classifier_answers_from_text_and_the_others_fail(nlu):
    (answer,) = nlu.analyze([NluItem("打开车窗")], fail={"encoder"})
    assert "injected" in answer.errors["encoder"]
    assert "encoder" in answer.errors["detector"] and "encoder" in answer.errors["retriever"]
    assert answer.scores["classifier"][0][0] == "cabin_window_open"
    assert "n-gram" in answer.partial["classifier"]


def test_a_failing_head_leaves_the_others_standing(nlu):
    (answer,) = nlu.analyze([NluItem("打开车窗")], fail={"retriever"})
    assert set(answer.errors) == {"retriever"}
    assert answer.scores["classifier"][0][0] == answer.scores["detector"][0][0] == "cabin_window_open"


def test_noop_models_answer_at_once_with_nothing(cockpit):
    _, settings = cockpit
    noop = build_nlu(settings.model_copy(update={"models": settings.models.model_copy(update={"noop": True})}))
    (answer,) = noop.analyze([NluItem("打开车窗")])
    assert answer.scores == {"classifier": [], "detector": [], "retriever": []} and answer.errors == {}


def test_each_clause_is_scored_by_the_classifier_and_the_detector_in_the_same_pass(nlu):
    """The planner reads per-clause scores; they come from the turn's one encoder pass, not from a second call."""
    before = nlu.encoder.counts["passes"]
    (answer,) = nlu.analyze([ITEMS[-1]])
    assert nlu.encoder.counts["passes"] - before == 1
    for head in ("classifier", "detector"):
        assert [c[0][0] for c in answer.clauses[head]] == ["cabin_window_open", "cabin_play_music"], head
    assert "retriever" not in answer.clauses
