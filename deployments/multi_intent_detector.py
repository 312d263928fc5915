"""MultiIntentDetector: independent sigmoid scores per task intent (seed 003 §14), top-k per turn."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from deployments.artifacts import DETECTOR_HEAD, LinearHead, sigmoid
from protocol.turn_debug import Candidate


class MultiIntentDetector:
    def __init__(self, *, artifacts: Path, top_k: int) -> None:
        self._head = LinearHead.load(artifacts / DETECTOR_HEAD)
        self._top_k = top_k
        self.dim = int(self._head.weight.shape[1])

    def detect(self, turns: list[np.ndarray]) -> list[tuple[list[Candidate], list[list[Candidate]]]]:
        """Per turn, the rows of its text and of each clause: the turn's labels, a label scoring its best over
        the rows (a pair of requests blurs in one embedding of the whole text), and each clause's own labels."""
        if not turns:
            return []
        flat = sigmoid(self._head.logits(np.concatenate(turns)))
        bounds = np.cumsum([0] + [len(v) for v in turns])
        return [
            (self._top(flat[a:b].max(axis=0)), [self._top(row) for row in flat[a + 1 : b]])
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]

    def _top(self, row: np.ndarray) -> list[Candidate]:
        labels = self._head.labels
        return [Candidate(intent=labels[j], score=float(row[j])) for j in np.argsort(-row)[: self._top_k]]
