"""models.selection: stratified folds, out-of-fold scoring that never lets a fold see its own rows, calibration, and
the choice of the fusion settings by the top-1 `engine.fusion.fuse` gives.

The fold encoder is the code around the unit here, so it is a recording stand-in; the tuning itself is tested on the
real encoder in test_finetune.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from deployments.artifacts import softmax
from engine.keyword import KeywordMatcher
from engine.pack import Intent, Pack
from models.folds import FrozenEncoder, OutOfFold, fold_ids, out_of_fold
from models.selection import select, temperature, votes
from tests.support.packs import settings_for

LABELS = ["a", "b", "c"]


def test_folds_are_stratified_disjoint_and_deterministic():
    y = np.array([0] * 10 + [1] * 7 + [2] * 3)
    ids = fold_ids(y, 4, seed=0)
    assert set(ids) == {0, 1, 2, 3} and len(ids) == len(y)
    for label in range(3):
        counts = np.bincount(ids[y == label], minlength=4)
        assert counts.max() - counts.min() <= 1, (label, counts)  # each label dealt round the folds
    assert (fold_ids(y, 4, seed=0) == ids).all()


def test_temperature_recovers_the_one_the_labels_were_drawn_at():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4000, 5)) * 3
    y = np.array([rng.choice(5, p=p) for p in softmax(logits / 2.5)])
    assert temperature(logits, y) == pytest.approx(2.5, rel=0.15)


class Recorded:
    """A fold encoder that remembers the rows it was tuned on and embeds every row as a fixed random unit vector."""

    def __init__(self, rows, vectors):
        self.rows, self.vectors = set(rows.tolist()), vectors

    def embed(self, states):
        return self.vectors

    def head_weights(self):
        return np.eye(3, self.vectors.shape[1]), np.zeros(3)


def test_no_fold_is_scored_by_models_that_saw_it():
    rng = np.random.default_rng(1)
    n = 48
    y = np.arange(n) % 3
    texts = [f"{LABELS[k]}-{i}" for i, k in enumerate(y)]
    vectors = rng.normal(size=(n, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tuned: list[Recorded] = []

    def tune(rows, labels):
        assert (labels == y[rows]).all()
        tuned.append(Recorded(rows, vectors))
        return tuned[-1]

    oof = out_of_fold(
        None,
        texts,
        y,
        LABELS,
        states=list(range(n)),
        recipe=_recipe(),
        folds=4,
        c=10.0,
        neighbors=5,
        progress=lambda _: None,
        tune=tune,
    )
    assert len(tuned) == 4
    for fold, encoder in enumerate(tuned):
        held = set(np.flatnonzero(oof.fold == fold).tolist())
        assert held and not held & encoder.rows and held | encoder.rows == set(range(n))
    # a row's own vector (similarity 1) is never among its neighbours: the index of a fold holds the other folds only
    assert oof.sims.max() < 0.999
    assert np.isfinite(oof.head_logits).all() and oof.head_logits.shape == (n, 3)


def _recipe():
    from models.finetune import Recipe

    return Recipe(
        epochs=1, frozen_layers=0, learning_rate=1e-4, head_learning_rate=1e-3, batch_size=8, max_tokens=16, seed=0
    )


def _oof(head: np.ndarray, y: np.ndarray, neighbors: np.ndarray) -> OutOfFold:
    n = len(y)
    return OutOfFold(
        texts=[f"t{i}" for i in range(n)],
        y=y,
        labels=LABELS,
        head_logits=head,
        tuned_logits=head.copy(),
        ngram_logits=head.copy(),
        sims=np.tile(np.linspace(0.9, 0.8, neighbors.shape[1]), (n, 1)),
        neighbors=neighbors,
        fold=np.arange(n) % 4,
    )


def _pack() -> Pack:
    return Pack(name="t", intents=[Intent(id=i, label=i, examples=["x"]) for i in LABELS])


def test_a_retriever_that_pulls_confident_rows_elsewhere_loses_its_say():
    """The classifier is sure on every row and right on nine in ten; the retriever's neighbours point elsewhere on a
    third of the rows: the chosen fusion answers like the classifier — fusion never loses to its best stage."""
    settings = settings_for("cockpit")
    n = 90
    y = np.arange(n) % 3
    wrong = (y + 1) % 3
    answered = np.where(np.arange(n) % 10 == 9, wrong, y)
    head = np.full((n, 3), -2.0)
    head[np.arange(n), answered] = 2.0
    neighbors = np.where(np.arange(n)[:, None] % 3 == 0, wrong[:, None], y[:, None]).repeat(5, axis=1)
    chosen = select(
        _oof(head, y, neighbors), KeywordMatcher(_pack()), settings.fusion, settings.models.selection, top_k=5
    )
    classifier_alone = chosen.report["classifier_top1"]["chosen"]
    assert classifier_alone == pytest.approx(0.9)
    assert chosen.report["fusion_top1"] >= classifier_alone
    plain = {
        o["retriever_weight"]: o["top1"] for o in chosen.report["fusion_options"] if o["classifier_decides_at"] is None
    }
    assert plain[1.0] < classifier_alone  # the weighted sum at full retriever weight loses rows: the choice mattered


def test_a_retriever_that_knows_better_keeps_its_weight():
    """The classifier is unsure and wrong on some rows where every neighbour is right: the retriever gets weight."""
    settings = settings_for("cockpit")
    n = 60
    y = np.arange(n) % 3
    head = np.zeros((n, 3))
    head[np.arange(n), y] = 1.0
    unsure = np.arange(n) % 4 == 0
    head[unsure, (y[unsure] + 1) % 3] = 1.3  # a close second wins on a quarter of the rows
    neighbors = y[:, None].repeat(5, axis=1)
    chosen = select(
        _oof(head, y, neighbors), KeywordMatcher(_pack()), settings.fusion, settings.models.selection, top_k=5
    )
    assert chosen.fusion["weights"]["retriever"] > 0
    assert chosen.report["fusion_top1"] == 1.0 > chosen.report["classifier_top1"]["chosen"]


def test_votes_sum_to_one_over_the_neighbours_labels():
    y = np.array([0, 1])
    oof = _oof(np.zeros((2, 3)), y, np.array([[0, 0, 1], [2, 1, 1]]))
    v = votes(oof, 0.05)
    assert np.allclose(v.sum(1), 1.0)
    assert v[0].argmax() == 0 and v[1, 0] == 0.0


def test_a_frozen_encoders_folds_choose_among_the_logistic_head_and_the_n_gram_model():
    """A pack served on the frozen encoder: every fold reads the same vectors, no fold has a tuned head, and the choice
    (head temperature, n-gram share, fusion) is made from the refit head's out-of-fold scores."""
    settings = settings_for("cockpit")
    rng = np.random.default_rng(2)
    n = 60
    y = np.arange(n) % 3
    centers = rng.normal(size=(3, 16))
    vectors = (centers[y] + 0.8 * rng.normal(size=(n, 16))).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"{LABELS[k]}{i}" for i, k in enumerate(y)]
    oof = out_of_fold(
        None,
        texts,
        y,
        LABELS,
        states=list(range(n)),
        recipe=_recipe(),
        folds=4,
        c=10.0,
        neighbors=5,
        progress=lambda _: None,
        tune=lambda rows, ys: FrozenEncoder(vectors),
    )
    assert oof.tuned_logits is None and np.isfinite(oof.head_logits).all()
    chosen = select(oof, KeywordMatcher(_pack()), settings.fusion, settings.models.selection, top_k=5)
    assert chosen.head == "refit" and chosen.report["classifier_top1"]["tuned_head"] is None
    assert chosen.report["classifier_top1"]["refit_head"] > 0.8  # the clusters are separable: the folds saw it
    assert chosen.report["fusion_top1"] >= chosen.report["classifier_top1"]["chosen"] - 1e-9
