"""On-disk layout of a built pack's model artifacts and the linear head format shared by training and serving."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MANIFEST = "manifest.json"
CLASSIFIER_HEAD = "classifier/head.npz"
CLASSIFIER_NGRAM = "classifier/ngram.joblib"
DETECTOR_HEAD = "detector/head.npz"
RETRIEVER_INDEX = "retriever/index.faiss"
RETRIEVER_ROWS = "retriever/rows.json"


@dataclass(frozen=True)
class LinearHead:
    """logits = x @ weight.T + bias over `labels`; softmax for single-label, sigmoid for multi-label."""

    weight: np.ndarray
    bias: np.ndarray
    labels: list[str]

    def logits(self, x: np.ndarray) -> np.ndarray:
        return x @ self.weight.T + self.bias

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, weight=self.weight.astype(np.float32), bias=self.bias.astype(np.float32),
                 labels=np.array(self.labels, dtype=object))

    @classmethod
    def load(cls, path: Path) -> "LinearHead":
        with np.load(path, allow_pickle=True) as data:
            return cls(weight=data["weight"], bias=data["bias"], labels=[str(x) for x in data["labels"]])


def read_manifest(artifacts: Path) -> dict:
    path = artifacts / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"No built models at {artifacts}; run `make models PACK=<name>` first.")
    return json.loads(path.read_text(encoding="utf-8"))


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))
