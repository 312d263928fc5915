"""EmbeddingRetriever: nearest training examples in a FAISS index, voted into per-intent scores."""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np

from config.models import ModelsConfig
from deployments.artifacts import RETRIEVER_INDEX, RETRIEVER_ROWS, selected
from protocol.turn_debug import Candidate


class EmbeddingRetriever:
    def __init__(self, *, artifacts: Path, cfg: ModelsConfig, top_k: int) -> None:
        self._index = faiss.read_index(str(artifacts / RETRIEVER_INDEX))
        rows = json.loads((artifacts / RETRIEVER_ROWS).read_text(encoding="utf-8"))
        self._intents = [r["intent"] for r in rows]
        self._neighbors = min(cfg.retriever_neighbors, len(rows))
        # calibrated on held-out folds when the pack was built, else the configured one
        self._temperature = selected(artifacts).get("retriever_temperature", cfg.retriever_temperature)
        self._top_k = top_k
        self.dim = int(self._index.d)

    def retrieve(self, vectors: np.ndarray) -> list[list[Candidate]]:
        """One ranking per row of `vectors` (normalized embeddings)."""
        if not len(vectors):
            return []
        sims, ids = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), self._neighbors)
        return [self._vote(s, i) for s, i in zip(sims, ids, strict=True)]

    def _vote(self, sims: np.ndarray, ids: np.ndarray) -> list[Candidate]:
        """Softmax over neighbour similarities, summed per intent: a distribution like the classifier's."""
        sims = sims.astype(np.float64)
        weights = np.exp((sims - sims.max()) / self._temperature)
        weights /= weights.sum()
        scores: dict[str, float] = {}
        for w, i in zip(weights, ids, strict=True):
            if i >= 0:
                scores[self._intents[i]] = scores.get(self._intents[i], 0.0) + float(w)
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])[: self._top_k]
        return [Candidate(intent=k, score=v) for k, v in ranked]
