"""On-disk layout of a built pack's model artifacts and the linear head format shared by training and serving."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from config.settings import Settings

MANIFEST = "manifest.json"
CLASSIFIER_HEAD = "classifier/head.npz"
CLASSIFIER_NGRAM = "classifier/ngram.joblib"
DETECTOR_HEAD = "detector/head.npz"
RETRIEVER_INDEX = "retriever/index.faiss"
RETRIEVER_ROWS = "retriever/rows.json"
TUNED_ENCODER = "encoder"  # the pack's tuned encoder folder (models/finetune.py), when the build tuned one
HELDOUT = "heldout"  # beside `models/`: a pack served on all its rows keeps here the models its held-out figure is from


@dataclass(frozen=True)
class LinearHead:
    """logits = x @ weight.T + bias over `labels`; softmax for single-label, sigmoid for multi-label."""

    weight: np.ndarray
    bias: np.ndarray
    labels: list[str]

    def logits(self, x: np.ndarray) -> np.ndarray:
        return cast(np.ndarray, x @ self.weight.T + self.bias)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(
            path,
            weight=self.weight.astype(np.float32),
            bias=self.bias.astype(np.float32),
            labels=np.array(self.labels, dtype=object),
        )

    @classmethod
    def load(cls, path: Path) -> LinearHead:
        with np.load(path, allow_pickle=True) as data:
            return cls(weight=data["weight"], bias=data["bias"], labels=[str(x) for x in data["labels"]])


def read_manifest(artifacts: Path) -> dict[str, Any]:
    path = artifacts / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"No built models at {artifacts}; run `make models PACK=<name>` first.")
    return cast(dict[str, Any], json.loads(path.read_text(encoding="utf-8")))


def encoder_for(artifacts: Path, base: Path) -> Path:
    """The encoder a built pack's heads read: its own tuned one, or the shared `base` (a frozen build)."""
    tuned = read_manifest(artifacts).get("tuned_encoder")
    return artifacts / tuned if tuned else Path(base)


def selected(artifacts: Path) -> dict[str, Any]:
    """The settings chosen on held-out folds when the pack was built (`ngram_weight`, `retriever_temperature`,
    `fusion`, `planner`); empty for a frozen build, which serves the configured values."""
    return read_manifest(artifacts).get("selected") or {}


def served_settings(settings: Settings, artifacts: Path | None = None) -> Settings:
    """`settings` with the fusion and planner values the built pack chose on its held-out folds (the configured ones
    otherwise)."""
    artifacts = artifacts or settings.artifacts_dir()
    chosen = selected(artifacts) if (artifacts / MANIFEST).exists() else {}
    update = {
        name: getattr(settings, name).model_copy(update=chosen[name])
        for name in ("fusion", "planner")
        if chosen.get(name)
    }
    return settings.model_copy(update=update) if update else settings


def heldout_dir(artifacts: Path) -> Path:
    return artifacts.parent / HELDOUT


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return cast(np.ndarray, e / e.sum(axis=-1, keepdims=True))


def sigmoid(z: np.ndarray) -> np.ndarray:
    return cast(np.ndarray, 1.0 / (1.0 + np.exp(-z)))
