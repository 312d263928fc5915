"""Sentence embeddings from any HF / sentence-transformers encoder, normalized, with the e5 query prefix."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from models.encoder import QUERY_PREFIX, load_encoder


class Embedder:
    def __init__(self, path: str | Path, *, batch_size: int, threads: int | None = None) -> None:
        if threads:
            import torch

            torch.set_num_threads(threads)
        self._model = load_encoder(path)
        self._batch_size = batch_size
        # e5 checkpoints expect a role prefix; other encoders get the raw text
        self._prefix = QUERY_PREFIX if "e5" in str(path).lower() else ""

    @property
    def dim(self) -> int:
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode([self._prefix + t for t in texts], batch_size=self._batch_size,
                                     normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)
