"""What a pack build chooses on held-out folds (models/selection.py): the folds of a pack served on the frozen
encoder, the rows' clauses for `planner.accept_unmarked`, and the chosen settings with their report."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from config.settings import Settings
from engine.keyword import KeywordMatcher
from engine.pack import SPECIAL_INTENTS, Pack

if TYPE_CHECKING:
    from config.models import TuneConfig
    from models.finetune import Progress, Recipe
    from models.folds import Clauses, OutOfFold
    from models.train import Encode


def select_frozen(
    pack: Pack,
    texts: list[str],
    labels: list[str],
    vectors: np.ndarray,
    encode: Encode,
    settings: Settings,
    progress: Progress,
    timings: dict[str, float],
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The folds' choice for a pack served on the frozen encoder: its vectors as they are, a head per fold."""
    from models.folds import FrozenEncoder, out_of_fold

    m, cv = settings.models, settings.models.selection
    label_list = sorted(set(labels))
    if len(texts) < cv.min_rows or len(label_list) < 2:
        return None, {}
    started = time.time()
    y = np.array([label_list.index(lab) for lab in labels])
    clauses = clauses_of(pack, texts, label_list, settings)
    if clauses is not None:  # the folds read row numbers: the rows' vectors, then the clauses'
        vectors = np.concatenate([vectors, encode(clauses.texts)])
        clauses.states = list(range(len(texts), len(vectors)))
    oof = out_of_fold(
        None,
        texts,
        y,
        label_list,
        states=list(range(len(texts))),
        recipe=recipe_of(m.tune),
        folds=cv.folds,
        c=m.classifier_c,
        neighbors=m.retriever_neighbors,
        progress=progress,
        tune=lambda rows, ys: FrozenEncoder(vectors),
        clauses=clauses,
    )
    return chosen_settings(oof, pack, settings, progress, timings, started)


def clauses_of(pack: Pack, texts: list[str], label_list: list[str], settings: Settings) -> Clauses | None:
    """The clauses of the rows said in several with nothing marking several requests, for `planner.accept_unmarked`
    (models/unmarked_plans.py); None when the selection does not choose it."""
    from models.folds import Clauses
    from models.unmarked_plans import UnmarkedPlans

    if not settings.models.selection.accept_unmarked:
        return None
    plans = UnmarkedPlans(pack, settings)
    found = [(n, clause) for n, text in enumerate(texts) for clause in plans.unmarked(text)]
    return Clauses(
        texts=[c for _, c in found],
        rows=np.array([n for n, _ in found], dtype=int),
        states=[],
        detector_labels=[lab for lab in label_list if lab not in SPECIAL_INTENTS],
    )


def chosen_settings(
    oof: OutOfFold, pack: Pack, settings: Settings, progress: Progress, timings: dict[str, float], started: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What `select` chose on `oof`, as the manifest keeps it, and its report; both told to `progress`."""
    from models.selection import select
    from models.unmarked_plans import UnmarkedPlans

    cv = settings.models.selection
    chosen = select(
        oof,
        KeywordMatcher(pack),
        settings.fusion,
        cv,
        top_k=settings.top_k,
        plans=UnmarkedPlans(pack, settings) if oof.clauses is not None else None,
    )
    selection = {
        "head": chosen.head,
        "head_temperature": chosen.head_temperature,
        "ngram_temperature": chosen.ngram_temperature,
        "ngram_weight": chosen.ngram_weight,
        "retriever_temperature": chosen.retriever_temperature,
        "fusion": chosen.fusion,
        "planner": chosen.planner,
    }
    report = chosen.report
    timings["selection_s"] = round(time.time() - started, 1)
    progress(
        f"chosen on {cv.folds} held-out folds in {timings['selection_s']:.0f} s: the {chosen.head} head, n-gram weight "
        f"{chosen.ngram_weight}, retriever weight {chosen.fusion['weights']['retriever']}, classifier decides at "
        f"{chosen.fusion['classifier_decides_at']}; out-of-fold top-1: "
        f"classifier {report['classifier_top1']['chosen']:.3f}, "
        f"fusion {report['fusion_top1']:.3f}"
    )
    if "unmarked_plans" in report:
        u = report["unmarked_plans"]
        shares = ", ".join(f"{c['accept_unmarked']}: {c['planned']}" for c in u["by_accept_unmarked"])
        progress(
            f"a step without its own keyword in an unmarked turn needs {u['chosen']}: single commands of several "
            f"clauses planned by threshold ({u['rows_of_unmarked_clauses']} such rows of {u['rows']}) {shares}"
        )
    return selection, report


def recipe_of(tune: TuneConfig) -> Recipe:
    """The tuning recipe of `models.tune`."""
    from models.finetune import Recipe

    return Recipe(
        epochs=tune.epochs,
        frozen_layers=tune.frozen_layers,
        learning_rate=tune.learning_rate,
        head_learning_rate=tune.head_learning_rate,
        batch_size=tune.batch_size,
        max_tokens=tune.max_tokens,
        seed=tune.seed,
        label_smoothing=tune.label_smoothing,
        min_steps=tune.min_steps,
        max_epochs=tune.max_epochs,
        contrastive_weight=tune.contrastive_weight,
        contrastive_temperature=tune.contrastive_temperature,
    )
