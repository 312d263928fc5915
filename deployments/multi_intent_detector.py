"""MultiIntentDetector: independent sigmoid scores per task intent (seed 003 §14), top-k per turn."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from models.artifacts import DETECTOR_HEAD, LinearHead, sigmoid
from protocol.http_chat import Candidate


class MultiIntentDetector:
    def __init__(self, *, artifacts: Path, top_k: int) -> None:
        self._head = LinearHead.load(artifacts / DETECTOR_HEAD)
        self._top_k = top_k
        self.dim = int(self._head.weight.shape[1])

    def detect(self, turns: list[np.ndarray]) -> list[list[Candidate]]:
        """Per turn, the rows of its text and of each clause; a label's score is its best over them
        (a pair of requests blurs in one embedding of the whole text)."""
        if not turns:
            return []
        flat = sigmoid(self._head.logits(np.concatenate(turns)))
        bounds = np.cumsum([0] + [len(v) for v in turns])
        scores = np.stack([flat[a:b].max(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])
        order = np.argsort(-scores, axis=1)[:, : self._top_k]
        labels = self._head.labels
        return [[Candidate(intent=labels[j], score=float(row[j])) for j in idx] for row, idx in zip(scores, order)]
