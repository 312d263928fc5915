"""One build of a pack's models into a folder: tune the encoder, choose settings on held-out folds, train the heads.

With `models.finetune` the shared encoder is tuned on the rows (models/finetune.py), the classifier's temperatures
and n-gram share, the retriever's temperature, the fusion settings and the planner's `accept_unmarked` are chosen
by cross-validation on the same rows (models/selection.py, or taken from an earlier selection), and the heads and
the index are trained on the tuned encoder's vectors, as the encoder deployment will compute them. Without it the
encoder stays frozen and the same choice is made on folds that share its vectors (`models.selection.frozen`; off: the
configured values).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from config.settings import Settings
from deployments import artifacts as layout
from deployments.embedding import SentenceEncoder
from engine.pack import Pack
from models.pack_selection import chosen_settings, clauses_of, recipe_of, select_frozen
from models.selection_record import Recorded

if TYPE_CHECKING:
    from models.finetune import Progress


def sentence_encoder(settings: Settings, path: Path) -> SentenceEncoder:
    """The encoder the served models use, on the configured runtime (so the heads are trained on its vectors), with
    every core: building is offline, and `models.threads` is what a replica takes beside the others."""
    m = settings.models
    return SentenceEncoder(
        path,
        runtime=m.encoder_runtime,
        threads=None,
        batch_size=m.encode_batch_size,
        state_dir=settings.state_dir,
        device=m.device,
    )


def say(pack: Pack) -> Progress:
    return lambda message: print(f"[{pack.name}] {message}", flush=True)


def train_models(
    pack: Pack,
    rows: list[tuple[str, str]],
    settings: Settings,
    out: Path,
    base: Path,
    *,
    recorded: Recorded | None = None,
) -> dict[str, Any]:
    """Everything a pack serves, built from `rows` into `out`; returns the manifest's entries. `recorded` holds
    settings chosen before: by the folds of an earlier run on the same inputs (the pack's selection record), or by the
    build without the held-out rows (a pack served on all its rows chooses nothing on all of them: `{}` when that
    build chose nothing). Without it, the settings are chosen on folds of `rows`."""
    from models.train import build_index, train_classifier, train_detector

    progress, m = say(pack), settings.models
    texts, labels = [t for t, _ in rows], [i for _, i in rows]
    timings: dict[str, float] = {}
    report: dict[str, Any] = {}
    chosen_before = recorded.selected if recorded else None
    if recorded and recorded.report:
        progress("the settings chosen on folds of these rows are taken from the pack's record (selection.json)")
    encoder, tuned, selection, tuned_head = base, None, chosen_before or None, None
    if m.finetune:
        started = time.time()
        selection, report, tuned_head = _tune(
            pack, texts, labels, settings, out, base, chosen_before, progress, timings
        )
        encoder, tuned = out / layout.TUNED_ENCODER, layout.TUNED_ENCODER
        timings["tune_s"] = round(time.time() - started, 1)
    started = time.time()
    embedder = sentence_encoder(settings, encoder)
    vectors = embedder.encode(texts)
    if not m.finetune and m.selection.frozen and chosen_before is None:
        selection, report = select_frozen(pack, texts, labels, vectors, embedder.encode, settings, progress, timings)
    chosen = selection or {}
    classes = train_classifier(
        texts,
        labels,
        vectors,
        out,
        c=m.classifier_c,
        head=tuned_head if chosen.get("head", "tuned") == "tuned" else None,
        head_temperature=chosen.get("head_temperature", 1.0),
        ngram_temperature=chosen.get("ngram_temperature", 1.0),
    )
    # a head configured to read the text with its own encoder is built on that encoder's vectors
    own = {
        h: sentence_encoder(settings, Path(m.head(h).checkpoint or base))
        for h in ("detector", "retriever")
        if m.head(h).input == "text"
    }
    detector_encoder = own.get("detector", embedder)
    detector_labels = train_detector(
        rows, vectors if "detector" not in own else detector_encoder.encode(texts), detector_encoder.encode, out
    )
    build_index(texts, labels, vectors if "retriever" not in own else own["retriever"].encode(texts), out)
    timings["heads_s"] = round(time.time() - started, 1)
    progress(f"heads and index trained on {len(rows)} rows in {timings['heads_s']:.0f} s")
    return {
        "encoder": str(base),
        "tuned_encoder": tuned,
        "labels": classes,
        "detector_labels": detector_labels,
        "train_rows": len(rows),
        "train_counts": dict(Counter(labels)),
        "selected": selection,
        "selection_report": recorded.report if recorded else report,
        "selection_from": "record" if recorded and recorded.report else "folds" if report else None,
        "timings": timings,
    }


def _tune(
    pack: Pack,
    texts: list[str],
    labels: list[str],
    settings: Settings,
    out: Path,
    base_path: Path,
    chosen_before: dict[str, Any] | None,
    progress: Progress,
    timings: dict[str, float],
) -> tuple[dict[str, Any] | None, dict[str, Any], tuple[np.ndarray, np.ndarray]]:
    import torch

    from models.finetune import Base, Recipe, TunedTop, rows_digest
    from models.folds import out_of_fold

    m = settings.models
    tune, cv = m.tune, m.selection
    torch.set_num_threads(tune.threads or os.cpu_count() or 1)
    recipe = recipe_of(tune)
    label_list = sorted(set(labels))
    y = np.array([label_list.index(lab) for lab in labels])
    started = time.time()
    base = Base(base_path, max_tokens=tune.max_tokens)
    states = base.states(texts, tune.frozen_layers)
    timings["cache_s"] = round(time.time() - started, 1)
    progress(
        f"encoder's lower {tune.frozen_layers} layers run once over {len(texts)} rows in {timings['cache_s']:.0f} s"
    )
    report: dict[str, Any] = {}
    selection = chosen_before or None
    if chosen_before is None and len(texts) >= cv.min_rows and len(label_list) > 1:
        started = time.time()
        fold_recipe = Recipe(**{**asdict(recipe), "epochs": cv.fold_epochs, "frozen_layers": cv.fold_frozen_layers})
        fold_states = base.deeper(states, tune.frozen_layers, cv.fold_frozen_layers)
        clauses = clauses_of(pack, texts, label_list, settings)
        if clauses is not None:
            clauses.states = base.deeper(
                base.states(clauses.texts, tune.frozen_layers), tune.frozen_layers, cv.fold_frozen_layers
            )
        oof = out_of_fold(
            base,
            texts,
            y,
            label_list,
            states=fold_states,
            recipe=fold_recipe,
            folds=cv.folds,
            c=m.classifier_c,
            neighbors=m.retriever_neighbors,
            progress=progress,
            clauses=clauses,
        )
        selection, report = chosen_settings(oof, pack, settings, progress, timings, started)
    started = time.time()
    top = TunedTop(base, tune.frozen_layers).fit(
        states, y, len(label_list), recipe, progress=progress, what="tuning the encoder"
    )
    top.save(
        out / layout.TUNED_ENCODER,
        {
            "rows": len(texts),
            "rows_sha256": rows_digest(texts, labels),
            "base": str(base_path),
            "recipe": asdict(recipe),
        },
    )
    timings["final_tune_s"] = round(time.time() - started, 1)
    progress(f"encoder tuned on {len(texts)} rows in {timings['final_tune_s']:.0f} s")
    return selection, report, top.head_weights()
