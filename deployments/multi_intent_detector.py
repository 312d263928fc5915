"""MultiIntentDetector: independent sigmoid scores per task intent (seed 003 §14), top-k per text."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.settings import DetectorConfig, ModelsConfig
from models.artifacts import DETECTOR_HEAD, LinearHead, sigmoid
from models.embedding import Embedder
from protocol.http_chat import Candidate

WARMUP_TEXT = "打开车窗然后播放音乐"


class MultiIntentDetector:
    def __init__(self, *, artifacts: Path, encoder: Path, cfg: ModelsConfig, top_k: int, detector: DetectorConfig) -> None:
        self._detector = detector
        self._embedder = Embedder(encoder, batch_size=cfg.encode_batch_size, threads=cfg.torch_threads)
        self._head = LinearHead.load(artifacts / DETECTOR_HEAD)
        self._top_k = top_k

    def detect_batch(self, texts: list[str]) -> list[list[Candidate]]:
        """Each label's score is its best over the whole text and each of its clauses (a pair blurs in one embedding)."""
        pieces = [[t] + (c if len(c := self._detector.clauses(t)) > 1 else []) for t in texts]
        flat = sigmoid(self._head.logits(self._embedder.encode([p for ps in pieces for p in ps])))
        bounds = np.cumsum([0] + [len(ps) for ps in pieces])
        scores = np.stack([flat[a:b].max(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
        order = np.argsort(-scores, axis=1)[:, : self._top_k]
        labels = self._head.labels
        return [[Candidate(intent=labels[j], score=float(row[j])) for j in idx] for row, idx in zip(scores, order)]

    def warmup(self) -> None:
        self.detect_batch([WARMUP_TEXT])
