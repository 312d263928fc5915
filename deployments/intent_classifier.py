"""IntentClassifier: single-label intents as top-k probabilities, from a registry of backends keyed by the head's
input."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import joblib
import numpy as np

from config.models import ModelsConfig
from deployments.artifacts import CLASSIFIER_HEAD, CLASSIFIER_NGRAM, LinearHead, selected, softmax
from deployments.devices import torch_device
from protocol.turn_debug import Candidate

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline


class NgramModel:
    """The pack's char n-gram pipeline (TF-IDF + logistic regression) scored without sklearn's per-call overhead.

    For one short utterance `predict_proba` spends ~1.6 ms validating inputs; the same arithmetic on the few
    n-grams of the text takes ~0.1 ms and gives the same probabilities (a test holds them equal). Pipelines
    with other TF-IDF options fall back to `predict_proba`.
    """

    def __init__(self, pipeline: Pipeline) -> None:
        self._pipeline = pipeline
        tfidf, lr = pipeline.named_steps["tfidf"], pipeline.named_steps["lr"]
        self._fast = (
            tfidf.analyzer == "char"
            and tfidf.sublinear_tf
            and tfidf.norm == "l2"
            and tfidf.use_idf
            and not tfidf.binary
            and lr.coef_.shape[0] > 1
        )
        self._analyze = tfidf.build_analyzer()
        self._vocabulary = tfidf.vocabulary_
        self._idf = tfidf.idf_
        self._weight = np.ascontiguousarray(lr.coef_.T)
        self._bias = lr.intercept_

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        if not self._fast:
            return cast(np.ndarray, self._pipeline.predict_proba(texts))
        logits = np.tile(self._bias, (len(texts), 1))
        for row, text in enumerate(texts):
            counts = Counter(self._vocabulary[g] for g in self._analyze(text) if g in self._vocabulary)
            if counts:
                idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
                tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
                values = (1.0 + np.log(tf)) * self._idf[idx]
                logits[row] += (values / np.linalg.norm(values)) @ self._weight[idx]
        return softmax(logits)


class EncoderHeadBackend:
    """A linear head on the turn's shared embedding, ensembled with a char n-gram model on its text."""

    needs_vectors = True

    def __init__(self, *, artifacts: Path, cfg: ModelsConfig) -> None:
        self._head = LinearHead.load(artifacts / CLASSIFIER_HEAD)
        self._ngram = NgramModel(joblib.load(artifacts / CLASSIFIER_NGRAM))
        # the share chosen on held-out folds when the pack was built, else the configured one
        self._ngram_weight = selected(artifacts).get("ngram_weight", cfg.ngram_weight)
        self.labels = self._head.labels
        self.dim = int(self._head.weight.shape[1])

    def probabilities(self, texts: list[str], vectors: np.ndarray | None) -> np.ndarray:
        if vectors is None:
            raise ValueError("the encoder_head backend needs the turn's embedding")
        probs = softmax(self._head.logits(vectors))
        if self._ngram_weight:
            probs = (1 - self._ngram_weight) * probs + self._ngram_weight * self._ngram.predict_proba(texts)
        return probs

    def text_only(self, texts: list[str]) -> np.ndarray:
        """The n-gram model alone: what is left when the encoder failed."""
        return self._ngram.predict_proba(texts)


class SequenceClassificationBackend:
    """Any Hugging Face sequence-classification checkpoint (e.g. a fine-tuned bert-base-chinese) with id2label."""

    needs_vectors = False

    def __init__(self, *, artifacts: Path, cfg: ModelsConfig) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path = cfg.head("classifier").checkpoint
        if not path:
            raise ValueError(
                "models.heads.classifier.checkpoint must name a sequence-classification folder when input is text."
            )
        torch.set_num_threads(cfg.threads)
        self._torch = torch
        self._device = torch_device(cfg.device, "models.device")
        self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self._model = (
            AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True).eval().to(self._device)
        )
        id2label = self._model.config.id2label
        self.labels = [id2label[i] for i in range(len(id2label))]
        self.dim = 0  # reads text

    def probabilities(self, texts: list[str], vectors: np.ndarray | None = None) -> np.ndarray:
        with self._torch.inference_mode():
            batch = self._tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt").to(
                self._device
            )
            return self._torch.softmax(self._model(**batch).logits, dim=-1).cpu().numpy()

    def text_only(self, texts: list[str]) -> np.ndarray:
        return self.probabilities(texts)


BACKENDS: dict[str, Callable[..., EncoderHeadBackend | SequenceClassificationBackend]] = {
    "shared_embedding": EncoderHeadBackend,
    "text": SequenceClassificationBackend,
}


class IntentClassifier:
    def __init__(self, *, artifacts: Path, cfg: ModelsConfig, top_k: int) -> None:
        kind = cfg.head("classifier").input
        self._backend = BACKENDS[kind](artifacts=artifacts, cfg=cfg)
        self._top_k = top_k

    @property
    def needs_vectors(self) -> bool:
        return self._backend.needs_vectors

    @property
    def labels(self) -> list[str]:
        return self._backend.labels

    @property
    def dim(self) -> int:
        return self._backend.dim

    def classify(self, texts: list[str], vectors: np.ndarray | None = None) -> list[list[Candidate]]:
        """Top-k per text; `vectors` (one row per text) are the shared embedding when the backend reads it."""
        return self._ranked(self._backend.probabilities(texts, vectors)) if texts else []

    def classify_text_only(self, texts: list[str]) -> list[list[Candidate]]:
        """Without the embedding: the part of the ensemble that reads the text."""
        return self._ranked(self._backend.text_only(texts)) if texts else []

    def _ranked(self, probs: np.ndarray) -> list[list[Candidate]]:
        order = np.argsort(-probs, axis=1)[:, : self._top_k]
        return [
            [Candidate(intent=self.labels[j], score=float(row[j])) for j in idx]
            for row, idx in zip(probs, order, strict=True)
        ]
