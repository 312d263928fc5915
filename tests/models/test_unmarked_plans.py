"""models.unmarked_plans: `planner.accept_unmarked` chosen on the folds' scores of the rows' clauses, and the folds
scoring each clause with models that never saw its row.

The heads' scores are given here (the code around the choice is the unit); the folds' own models are tested in
test_selection.py and the built packs' plans in tests/engine/test_workflow_quality.py.
"""

from __future__ import annotations

import numpy as np

from engine.pack import Intent, Pack
from models.folds import Clauses, out_of_fold
from models.unmarked_plans import UnmarkedPlans
from tests.support.packs import settings_for

LABELS = ["feedback", "replan", "review"]
GRID = [1.3, 1.4, 1.5, 1.6, 1.8]


def _pack() -> Pack:
    return Pack(
        name="t",
        intents=[
            Intent(id="feedback", label="反馈", examples=["今天的跑步完成了", "报告写完了"]),
            Intent(id="replan", label="重排", examples=["帮我把今天剩下的重新排一下"]),
            Intent(id="review", label="复盘", keywords=["复盘"], examples=["帮我做个复盘"]),
        ],
    )


def _plans() -> UnmarkedPlans:
    return UnmarkedPlans(_pack(), settings_for("timeflow"))


def test_only_rows_of_several_clauses_that_no_word_marks_are_planned_here():
    plans = _plans()
    assert plans.unmarked("这周过完了，帮我做个复盘") == ["这周过完了", "帮我做个复盘"]
    assert plans.unmarked("帮我做个复盘") == []  # one clause: the threshold never applies
    assert plans.unmarked("先做个复盘，然后重新排一下明天") == []  # a connective marks two requests


def _scores(reason: float, rows: int) -> tuple[list[str], list[str], np.ndarray, np.ndarray, np.ndarray]:
    """`rows` single commands of two clauses: a reason the heads read as feedback at `reason`, then a request that
    names its intent (复盘) or does not (重排)."""
    texts, clauses, owner, classifier, detector = [], [], [], [], []
    for n in range(rows):
        request = "帮我做个复盘" if n % 2 else "帮我把剩下的重新排排"
        texts.append(f"这周过完了{n}，{request}")
        for clause, probs in (
            (f"这周过完了{n}", [reason, 0.02, 0.02]),
            (request, [0.02, 0.02, 0.96] if n % 2 else [0.02, 0.96, 0.02]),
        ):
            clauses.append(clause)
            owner.append(n)
            classifier.append(probs)
            detector.append(probs)
    return texts, clauses, np.array(owner), np.array(classifier), np.array(detector)


def test_the_least_threshold_that_keeps_the_single_commands_single_is_chosen():
    texts, clauses, owner, classifier, detector = _scores(0.9, rows=10)
    # the reason clause scores 0.9 + 0.5 × 0.9 + the example overlap: a step at 1.3, none above its score
    chosen, report = _plans().choose(
        texts, clauses, owner, LABELS, classifier, LABELS, detector, grid=GRID, max_share=0.0, top_k=3
    )
    curve = {c["accept_unmarked"]: c["planned"] for c in report["by_accept_unmarked"]}
    assert curve[1.3] == 10 and curve[1.8] == 0
    assert chosen == min(v for v, planned in curve.items() if planned == 0)
    assert all(curve[a] >= curve[b] for a, b in zip(GRID, GRID[1:], strict=False))
    assert report["rows_of_unmarked_clauses"] == 10 and report["chosen"] == chosen


def test_a_build_whose_reasons_read_weakly_keeps_the_configured_threshold():
    texts, clauses, owner, classifier, detector = _scores(0.3, rows=10)
    chosen, report = _plans().choose(
        texts, clauses, owner, LABELS, classifier, LABELS, detector, grid=GRID, max_share=0.0, top_k=3
    )
    assert chosen == 1.3 and report["by_accept_unmarked"][0]["planned"] == 0


def test_the_share_allowed_is_a_share_of_every_row():
    texts, clauses, owner, classifier, detector = _scores(0.9, rows=4)
    singles = [f"帮我做个复盘{n}" for n in range(396)]  # one clause each: never planned, but counted
    chosen, report = _plans().choose(
        texts + singles, clauses, owner, LABELS, classifier, LABELS, detector, grid=GRID, max_share=0.01, top_k=3
    )
    assert report["by_accept_unmarked"][0]["share"] == 4 / 400 and chosen == 1.3


class Recorded:
    """A fold encoder that remembers its training rows and the states it embedded; states are row numbers."""

    def __init__(self, rows, vectors):
        self.rows, self.vectors, self.embedded = set(rows.tolist()), vectors, []

    def embed(self, states):
        self.embedded.append(list(states))
        return self.vectors[np.asarray(states, dtype=int)]

    def head_weights(self):
        return None


def test_each_clause_is_scored_by_the_models_of_its_rows_fold():
    from models.finetune import Recipe

    rng = np.random.default_rng(3)
    n = 48
    y = np.arange(n) % 3
    texts = [f"{LABELS[k]}-{i}，第二句{i}" for i, k in enumerate(y)]
    vectors = rng.normal(size=(2 * n, 16)).astype(np.float32)  # the rows', then one clause per row
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tuned: list[Recorded] = []

    def tune(rows, labels):
        tuned.append(Recorded(rows, vectors))
        return tuned[-1]

    clauses = Clauses(
        texts=[f"第二句{i}" for i in range(n)], rows=np.arange(n), states=list(range(n, 2 * n)), detector_labels=LABELS
    )
    recipe = Recipe(
        epochs=1, frozen_layers=0, learning_rate=1e-4, head_learning_rate=1e-3, batch_size=8, max_tokens=16, seed=0
    )
    oof = out_of_fold(
        None,
        texts,
        y,
        LABELS,
        states=list(range(n)),
        recipe=recipe,
        folds=4,
        c=10.0,
        neighbors=5,
        progress=lambda _: None,
        tune=tune,
        clauses=clauses,
    )
    for encoder in tuned:
        clause_states = [s for batch in encoder.embedded[1:] for s in batch]
        assert clause_states and not {s - n for s in clause_states} & encoder.rows
    assert sorted(s - n for e in tuned for batch in e.embedded[1:] for s in batch) == list(range(n))
    c = oof.clauses
    assert np.isfinite(c.head_logits).all() and c.head_logits.max() > -30 and c.tuned_logits is None
    assert ((0 < c.detector) & (c.detector < 1)).all() and c.detector.shape == (n, 3)
