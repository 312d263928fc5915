"""Out-of-fold scores of a pack's training rows: k stratified folds, each scored by models built without it.

Per fold an encoder is tuned on the other folds (the fold recipe: more layers frozen, fewer epochs, so k of them
fit the build's time; a pack served on the frozen encoder reads its vectors as they are), and the classifier head,
the n-gram model and the retrieval index are fit on the other folds' rows; the fold's own rows, and their clauses,
are then scored by every stage. models/selection.py chooses the pack's settings on these scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from deployments.artifacts import sigmoid
from models.finetune import Base, Progress, Recipe, TunedTop
from models.train import fit_detector, fit_head, fit_ngram, ngram_logits

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

ABSENT = -30.0  # the logit of a label a fold's training part lacks


@dataclass
class Clauses:
    """The clauses of the training rows said in several (engine.clauses), scored like the rows: `states` are the
    base's outputs for each (as `out_of_fold`'s `states` are for the rows); `rows` the row each belongs to."""

    texts: list[str]
    rows: np.ndarray
    states: list[Any]
    detector_labels: list[str]  # the detector's labels (the task intents)
    head_logits: np.ndarray | None = None
    tuned_logits: np.ndarray | None = None
    ngram_logits: np.ndarray | None = None
    detector: np.ndarray | None = None  # sigmoid scores over `detector_labels`


@dataclass
class OutOfFold:
    """Every training row scored by models that never saw it."""

    texts: list[str]
    y: np.ndarray
    labels: list[str]
    head_logits: np.ndarray  # the logistic head refit on the fold encoder's vectors
    tuned_logits: np.ndarray | None  # the softmax head the fold encoder was tuned through (None: a frozen encoder)
    ngram_logits: np.ndarray
    sims: np.ndarray  # the nearest other-fold rows' similarities, best first
    neighbors: np.ndarray  # their label indices
    fold: np.ndarray
    clauses: Clauses | None = None  # each scored by the models of its row's fold


def fold_ids(y: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Stratified: each label's rows shuffled and dealt round the folds."""
    rng = np.random.default_rng(seed)
    ids = np.empty(len(y), dtype=int)
    offset = 0
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        rng.shuffle(rows)
        ids[rows] = (np.arange(len(rows)) + offset) % k
        offset += len(rows)
    return ids


class FoldModel(Protocol):
    """What a fold's tuner gives: the rows' embeddings and the softmax head it was tuned through, if any."""

    def embed(self, states: list[Any]) -> np.ndarray: ...

    def head_weights(self) -> tuple[np.ndarray, np.ndarray] | None: ...


class FrozenEncoder:
    """The folds' "tuner" for a pack served on the frozen encoder: every fold reads the same vectors and has no
    head of its own, so the folds choose among the logistic head and the n-gram model only. Its "states" are row
    numbers of `vectors`."""

    def __init__(self, vectors: np.ndarray) -> None:
        self._vectors = vectors

    def embed(self, states: list[Any]) -> np.ndarray:
        return cast(np.ndarray, self._vectors[np.asarray(states, dtype=int)])

    def head_weights(self) -> None:
        return None


def out_of_fold(
    base: Base | None,
    texts: list[str],
    y: np.ndarray,
    labels: list[str],
    *,
    states: list[Any],
    recipe: Recipe,
    folds: int,
    c: float,
    neighbors: int,
    progress: Progress,
    tune: Callable[..., FoldModel] | None = None,
    clauses: Clauses | None = None,
) -> OutOfFold:
    """`states` are the base's outputs at `recipe.frozen_layers` for every row; `tune(train_rows, …)` is the fold
    tuner (a test passes a recording one). `clauses`, when given, are scored in place by their rows' folds."""

    def tune_base(rows: np.ndarray, ys: np.ndarray) -> TunedTop:
        assert base is not None, "without `tune` the folds tune `base`"
        return TunedTop(base, recipe.frozen_layers).fit(
            [states[i] for i in rows],
            ys,
            len(labels),
            recipe,
            progress=progress,
            what=f"fold {fold + 1}/{folds} encoder",
        )

    tune = tune or tune_base
    ids = fold_ids(y, folds, recipe.seed)
    n, n_labels = len(texts), len(labels)
    head, joint, ngram = (np.full((n, n_labels), ABSENT) for _ in range(3))
    k = max(1, min(neighbors, n - int(np.bincount(ids).max())))
    sims, near = np.zeros((n, k), dtype=np.float32), np.zeros((n, k), dtype=int)
    if clauses is not None:
        m = len(clauses.texts)
        clauses.head_logits, clauses.tuned_logits, clauses.ngram_logits = (
            np.full((m, n_labels), ABSENT) for _ in range(3)
        )
        clauses.detector = np.zeros((m, len(clauses.detector_labels)))
    for fold in range(folds):
        train, held = np.flatnonzero(ids != fold), np.flatnonzero(ids == fold)
        if not len(held):
            continue
        top = tune(train, y[train])
        vectors = top.embed(states)
        present = np.unique(y[train])
        remap = np.searchsorted(present, y[train])
        tuned = top.head_weights()
        if tuned is not None:
            weight, bias = tuned
            joint[np.ix_(held, present)] = (vectors[held] @ weight.T + bias)[:, present]
        if len(present) > 1:
            weight, bias = fit_head(vectors[train], remap, c)
            head[np.ix_(held, present)] = vectors[held] @ weight.T + bias
            words = fit_ngram([texts[i] for i in train], remap, c)
            ngram[np.ix_(held, present)] = ngram_logits(words, [texts[i] for i in held])
            if clauses is not None:
                _score_clauses(
                    clauses,
                    np.flatnonzero(ids[clauses.rows] == fold),
                    top,
                    (weight, bias),
                    tuned,
                    words,
                    present,
                    vectors[train],
                    [labels[j] for j in y[train]],
                )
        else:
            head[np.ix_(held, present)] = ngram[np.ix_(held, present)] = 0.0
        s = vectors[held] @ vectors[train].T
        order = np.argsort(-s, axis=1)[:, :k]
        sims[held] = np.take_along_axis(s, order, axis=1)
        near[held] = y[train][order]
        own = f"of the tuned head {np.mean(joint[held].argmax(1) == y[held]):.3f}, " if tuned is not None else ""
        progress(
            f"fold {fold + 1}/{folds}: out-of-fold top-1 {own}"
            f"of the refit one {np.mean(head[held].argmax(1) == y[held]):.3f} "
            f"on {len(held)} rows"
        )
    if clauses is not None and tuned is None:
        clauses.tuned_logits = None
    return OutOfFold(
        texts=texts,
        y=y,
        labels=labels,
        head_logits=head,
        tuned_logits=joint if tuned is not None else None,
        ngram_logits=ngram,
        sims=sims,
        neighbors=near,
        fold=ids,
        clauses=clauses,
    )


def _score_clauses(
    clauses: Clauses,
    held: np.ndarray,
    top: FoldModel,
    head: tuple[np.ndarray, np.ndarray],
    tuned: tuple[np.ndarray, np.ndarray] | None,
    words: Pipeline,
    present: np.ndarray,
    train_vectors: np.ndarray,
    train_labels: list[str],
) -> None:
    """The held rows' clauses by the fold's models: its encoder, heads and n-gram model, and a detector fit on the
    fold's rows (single rows only: the served one also learns from synthesized pairs, which would cost the fold
    another encoder pass over them)."""
    if not len(held):
        return
    assert clauses.head_logits is not None and clauses.tuned_logits is not None  # out_of_fold set them
    assert clauses.ngram_logits is not None and clauses.detector is not None
    vectors = top.embed([clauses.states[i] for i in held])
    clauses.head_logits[np.ix_(held, present)] = vectors @ head[0].T + head[1]
    if tuned is not None:  # the tuned head spans every label
        clauses.tuned_logits[np.ix_(held, present)] = (vectors @ tuned[0].T + tuned[1])[:, present]
    clauses.ngram_logits[np.ix_(held, present)] = ngram_logits(words, [clauses.texts[i] for i in held])
    detector = fit_detector(train_vectors, [[label] for label in train_labels], clauses.detector_labels)
    clauses.detector[held] = sigmoid(detector.logits(vectors))
