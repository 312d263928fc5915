"""EmbeddingRetriever: nearest training examples in a FAISS index, voted into per-intent scores."""
from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np

from engine.settings import ModelsConfig
from models.artifacts import RETRIEVER_INDEX, RETRIEVER_ROWS
from models.embedding import Embedder
from protocol.http_chat import Candidate

WARMUP_TEXT = "打开车窗"


class EmbeddingRetriever:
    def __init__(self, *, artifacts: Path, encoder: Path, cfg: ModelsConfig, top_k: int) -> None:
        self._embedder = Embedder(encoder, batch_size=cfg.encode_batch_size, threads=cfg.torch_threads)
        self._index = faiss.read_index(str(artifacts / RETRIEVER_INDEX))
        rows = json.loads((artifacts / RETRIEVER_ROWS).read_text(encoding="utf-8"))
        self._intents = [r["intent"] for r in rows]
        self._neighbors = min(cfg.retriever_neighbors, len(rows))
        self._temperature = cfg.retriever_temperature
        self._top_k = top_k

    def retrieve_batch(self, texts: list[str]) -> list[list[Candidate]]:
        sims, ids = self._index.search(self._embedder.encode(texts), self._neighbors)
        return [self._vote(s, i) for s, i in zip(sims, ids)]

    def _vote(self, sims: np.ndarray, ids: np.ndarray) -> list[Candidate]:
        """Softmax over neighbour similarities, summed per intent: a distribution like the classifier's."""
        sims = sims.astype(np.float64)
        weights = np.exp((sims - sims.max()) / self._temperature)
        weights /= weights.sum()
        scores: dict[str, float] = {}
        for w, i in zip(weights, ids):
            if i >= 0:
                scores[self._intents[i]] = scores.get(self._intents[i], 0.0) + float(w)
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])[: self._top_k]
        return [Candidate(intent=k, score=v) for k, v in ranked]

    def warmup(self) -> None:
        self.retrieve_batch([WARMUP_TEXT])
