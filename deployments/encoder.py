"""Encoder: one forward pass over every text of a batch of turns (each turn's text and its clauses)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.settings import ModelsConfig
from models.embedding import RunControl, SentenceEncoder

WARMUP_TEXTS = (("打开车窗然后播放音乐", "打开车窗", "播放音乐"), ("把空调调到二十二度",))


class Encoder:
    """Counts what it did (`passes`, `turns`, `texts`) so a test can prove one pass per turn."""

    def __init__(self, *, path: Path, cfg: ModelsConfig, state_dir: Path) -> None:
        self._model = SentenceEncoder(path, runtime=cfg.encoder_runtime, threads=cfg.threads, batch_size=cfg.encode_batch_size,
                                      state_dir=state_dir, device=cfg.device)
        self.counts = {"passes": 0, "turns": 0, "texts": 0}

    @property
    def dim(self) -> int:
        return self._model.dim

    def encode(self, turns: Sequence[Sequence[str]], control: RunControl | None = None) -> list[np.ndarray]:
        """One array per turn, one row per text of that turn, all from a single encoder call."""
        flat = [t for texts in turns for t in texts]
        vectors = self._model.encode(flat, control)
        self.counts["passes"] += 1
        self.counts["turns"] += len(turns)
        self.counts["texts"] += len(flat)
        bounds = np.cumsum([0] + [len(texts) for texts in turns])
        return [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def warmup(self) -> None:
        self.encode(WARMUP_TEXTS)
