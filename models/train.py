"""Training of the classifier and detector heads and the retrieval index from a pack's training split only."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import cast

import faiss
import joblib
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from deployments.artifacts import (
    CLASSIFIER_HEAD,
    CLASSIFIER_NGRAM,
    DETECTOR_HEAD,
    RETRIEVER_INDEX,
    RETRIEVER_ROWS,
    LinearHead,
)
from engine.pack import SPECIAL_INTENTS

Encode = Callable[[list[str]], np.ndarray]

# Joiners real users put between two requests in one breath.
CONNECTORS = (
    "，然后",
    "，再",
    "，顺便",
    "，同时",
    "然后",
    "，还有",
    "，另外",
    "并且",
    "，再帮我",
    "，",
    "。",
    "，接着",
)
# Picked on a held-out 20% of the cockpit TRAINING split: pair recall .667 → .787 vs (40 pairs, C=10).
DETECTOR_C = 30.0
MULTI_PER_LABEL = 80
MAX_ITER = 3000


def _ngram_model(c: float) -> Pipeline:
    return Pipeline(
        [
            ("tfidf", TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True)),
            ("lr", LogisticRegression(C=c, max_iter=MAX_ITER)),
        ]
    )


def fit_head(vectors: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """A multinomial logistic head on embeddings as (weight, bias) of its softmax logits."""
    return softmax_logits(LogisticRegression(C=c, max_iter=MAX_ITER).fit(vectors, y))


def fit_ngram(texts: list[str], y: np.ndarray, c: float) -> Pipeline:
    """The char 1–3-gram TF-IDF + logistic regression model of the classifier ensemble."""
    return _ngram_model(c).fit(texts, y)


def softmax_logits(lr: LogisticRegression) -> tuple[np.ndarray, np.ndarray]:
    """(weight, bias) whose softmax is `lr.predict_proba`; two classes get ±half the binary logit (softmax =
    sigmoid)."""
    if lr.coef_.shape[0] == 1:
        return np.concatenate([-lr.coef_, lr.coef_]) / 2, np.concatenate([-lr.intercept_, lr.intercept_]) / 2
    return lr.coef_, lr.intercept_


def ngram_logits(model: Pipeline, texts: list[str]) -> np.ndarray:
    weight, bias = softmax_logits(model.named_steps["lr"])
    return cast(np.ndarray, model.named_steps["tfidf"].transform(texts) @ weight.T + bias)


def train_classifier(
    texts: list[str],
    labels: list[str],
    vectors: np.ndarray,
    out: Path,
    *,
    c: float,
    head: tuple[np.ndarray, np.ndarray] | None = None,
    head_temperature: float = 1.0,
    ngram_temperature: float = 1.0,
) -> list[str]:
    """A softmax head on embeddings — `head` (the one the encoder was tuned through, over the sorted labels) or a
    multinomial logistic regression fit here — plus a char 1–3-gram TF-IDF model for the ensemble. A temperature
    (chosen on held-out folds, models/selection.py) is folded into each model's logits, so serving reads calibrated
    probabilities with no extra step."""
    label_list = sorted(set(labels))
    y = np.array([label_list.index(lab) for lab in labels])
    weight, bias = head if head is not None else fit_head(vectors, y, c)
    LinearHead(weight / head_temperature, bias / head_temperature, label_list).save(out / CLASSIFIER_HEAD)
    ngram = fit_ngram(texts, y, c)
    lr = ngram.named_steps["lr"]
    lr.coef_, lr.intercept_ = lr.coef_ / ngram_temperature, lr.intercept_ / ngram_temperature
    joblib.dump(ngram, out / CLASSIFIER_NGRAM)
    return label_list


def synthesize_multi(rows: list[tuple[str, str]], seed: int = 0) -> list[tuple[str, list[str]]]:
    """Single-intent rows keep their label; pairs of rows from two task intents, joined as people do, carry both."""
    rng = random.Random(seed)
    by_intent: dict[str, list[str]] = {}
    for text, intent in rows:
        by_intent.setdefault(intent, []).append(text)
    tasks = sorted(i for i in by_intent if i not in SPECIAL_INTENTS)
    out: list[tuple[str, list[str]]] = [(t, [] if i in SPECIAL_INTENTS else [i]) for t, i in rows]
    for first in tasks:
        for _ in range(MULTI_PER_LABEL):
            second = rng.choice([t for t in tasks if t != first])
            a, b = rng.choice(by_intent[first]), rng.choice(by_intent[second])
            if rng.random() < 0.5:
                a, b, pair = b, a, [second, first]
            else:
                pair = [first, second]
            out.append((a.rstrip("。！!") + rng.choice(CONNECTORS) + b, pair))
    return out


def train_detector(rows: list[tuple[str, str]], row_vectors: np.ndarray, encode: Encode, out: Path) -> list[str]:
    """One-vs-rest sigmoid head over task intents, trained on single rows and synthesized pairs."""
    samples = synthesize_multi(rows)  # the single rows come first, in order: reuse their vectors
    label_list = sorted({lab for _, labs in samples for lab in labs})
    x = np.concatenate([row_vectors, encode([t for t, _ in samples[len(rows) :]])])
    fit_detector(x, [labs for _, labs in samples], label_list).save(out / DETECTOR_HEAD)
    return label_list


def fit_detector(x: np.ndarray, label_sets: list[list[str]], labels: list[str]) -> LinearHead:
    """One sigmoid head per label over `x`; a label no row carries gets a head that never fires."""
    weights, biases = [], []
    for label in labels:
        y = np.array([label in labs for labs in label_sets], dtype=int)
        if y.min() == y.max():
            weights.append(np.zeros(x.shape[1]))
            biases.append(30.0 if y.min() else -30.0)
            continue
        clf = LogisticRegression(C=DETECTOR_C, max_iter=MAX_ITER).fit(x, y)
        weights.append(clf.coef_[0])
        biases.append(clf.intercept_[0])
    return LinearHead(np.stack(weights), np.array(biases), labels)


def build_index(texts: list[str], labels: list[str], vectors: np.ndarray, out: Path) -> None:
    """Exact inner-product index over normalized training embeddings, one row per example."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    (out / RETRIEVER_INDEX).parent.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(out / RETRIEVER_INDEX))
    (out / RETRIEVER_ROWS).write_text(
        json.dumps([{"text": t, "intent": i} for t, i in zip(texts, labels, strict=True)], ensure_ascii=False),
        encoding="utf-8",
    )
