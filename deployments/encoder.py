"""Encoder: one forward pass over every text of a batch of turns (each turn's text and its clauses).

A pass that finds the replica quiet — one turn, no other pass running, none for `models.idle_after_ms` — may use
`models.idle_threads` (onnx): an idle assistant answers on every core, a busy one keeps one thread per replica
(config/TUNING.md has both measurements)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from config.models import ModelsConfig
from deployments.embedding import RunControl, SentenceEncoder

WARMUP_TEXTS = (("打开车窗然后播放音乐", "打开车窗", "播放音乐"), ("把空调调到二十二度",))


class Encoder:
    """Counts what it did (`passes`, `turns`, `texts`, `quiet_passes`) so a test can prove one pass per turn."""

    def __init__(self, *, path: Path, cfg: ModelsConfig, state_dir: Path) -> None:
        self._model = SentenceEncoder(
            path,
            runtime=cfg.encoder_runtime,
            threads=cfg.threads,
            batch_size=cfg.encode_batch_size,
            state_dir=state_dir,
            device=cfg.device,
            idle_threads=cfg.idle_threads,
            idle_nice=cfg.idle_nice,
            idle_park=cfg.idle_park,
        )
        self.counts = {"passes": 0, "turns": 0, "texts": 0, "quiet_passes": 0}
        self._idle_after_s = cfg.idle_after_ms / 1000.0
        self._lock = threading.Lock()
        self._running = 0
        self._last_end = float("-inf")

    @property
    def dim(self) -> int:
        return self._model.dim

    def encode(self, turns: Sequence[Sequence[str]], control: RunControl | None = None) -> list[np.ndarray]:
        """One array per turn, one row per text of that turn, all from a single encoder call."""
        flat = [t for texts in turns for t in texts]
        with self._lock:
            quiet = (
                self._model.has_quiet_session
                and len(turns) == 1
                and self._running == 0
                and time.monotonic() - self._last_end >= self._idle_after_s
            )
            self._running += 1
        try:
            vectors = self._model.encode(flat, control, quiet=quiet)
        finally:
            with self._lock:
                self._running -= 1
                self._last_end = time.monotonic()
        self.counts["passes"] += 1
        self.counts["quiet_passes"] += quiet
        self.counts["turns"] += len(turns)
        self.counts["texts"] += len(flat)
        bounds = np.cumsum([0] + [len(texts) for texts in turns])
        return [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def warmup(self) -> None:
        self.encode(WARMUP_TEXTS)
        if self._model.has_quiet_session:  # the quiet session's first pass is slow too
            self._model.encode(list(WARMUP_TEXTS[1]), quiet=True)
