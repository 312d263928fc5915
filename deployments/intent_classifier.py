"""IntentClassifier: single-label intents as top-k probabilities, from a registry of backends chosen by config."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import joblib
import numpy as np

from engine.settings import ModelsConfig
from models.artifacts import CLASSIFIER_HEAD, CLASSIFIER_NGRAM, LinearHead, softmax
from models.embedding import Embedder
from protocol.http_chat import Candidate

WARMUP_TEXT = "打开车窗"


class EncoderHeadBackend:
    """Sentence encoder + linear head, ensembled with a char n-gram model (weights from config)."""

    def __init__(self, *, artifacts: Path, encoder: Path, cfg: ModelsConfig) -> None:
        self._embedder = Embedder(encoder, batch_size=cfg.encode_batch_size, threads=cfg.torch_threads)
        self._head = LinearHead.load(artifacts / CLASSIFIER_HEAD)
        self._ngram = joblib.load(artifacts / CLASSIFIER_NGRAM)
        self._ngram_weight = cfg.ngram_weight
        self.labels = self._head.labels

    def probabilities(self, texts: list[str]) -> np.ndarray:
        probs = softmax(self._head.logits(self._embedder.encode(texts)))
        if self._ngram_weight:
            probs = (1 - self._ngram_weight) * probs + self._ngram_weight * self._ngram.predict_proba(texts)
        return probs


class SequenceClassificationBackend:
    """Any Hugging Face sequence-classification checkpoint (e.g. a fine-tuned bert-base-chinese) with id2label."""

    def __init__(self, *, artifacts: Path, encoder: Path, cfg: ModelsConfig) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        torch.set_num_threads(cfg.torch_threads)
        path = cfg.classifier_path
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self._model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True).eval()
        id2label = self._model.config.id2label
        self.labels = [id2label[i] for i in range(len(id2label))]

    def probabilities(self, texts: list[str]) -> np.ndarray:
        with self._torch.inference_mode():
            batch = self._tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
            return self._torch.softmax(self._model(**batch).logits, dim=-1).numpy()


BACKENDS: dict[str, Callable[..., EncoderHeadBackend | SequenceClassificationBackend]] = {
    "encoder_head": EncoderHeadBackend,
    "hf_sequence_classification": SequenceClassificationBackend,
}


class IntentClassifier:
    def __init__(self, *, artifacts: Path, encoder: Path, cfg: ModelsConfig, top_k: int) -> None:
        if cfg.classifier_backend not in BACKENDS:
            raise ValueError(f"Unknown classifier backend '{cfg.classifier_backend}'; choose one of {sorted(BACKENDS)}.")
        self._backend = BACKENDS[cfg.classifier_backend](artifacts=artifacts, encoder=encoder, cfg=cfg)
        self._top_k = top_k

    @property
    def labels(self) -> list[str]:
        return self._backend.labels

    def classify_batch(self, texts: list[str]) -> list[list[Candidate]]:
        if not texts:
            return []
        probs = self._backend.probabilities(texts)
        order = np.argsort(-probs, axis=1)[:, : self._top_k]
        return [[Candidate(intent=self.labels[j], score=float(row[j])) for j in idx] for row, idx in zip(probs, order)]

    def warmup(self) -> None:
        self.classify_batch([WARMUP_TEXT])
