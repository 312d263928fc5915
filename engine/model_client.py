"""The one interface through which the engine calls models; Ray handles and in-process models implement it."""
from __future__ import annotations

import abc

from protocol.http_chat import Candidate


class StageError(Exception):
    """A model stage failed (the replica raised, shed the request, or was unreachable)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage


class ModelClient(abc.ABC):
    """Async model calls used by a turn.

    Every call takes the turn's absolute `deadline` (epoch seconds) so a replica can drop work whose
    answer would arrive too late. Implementations must cancel the underlying request when the awaiting
    task is cancelled (the engine cancels a stage on budget expiry) and raise `StageError` on failure.
    Results are candidates sorted by descending score.
    """

    @abc.abstractmethod
    async def classify(self, text: str, *, deadline: float) -> list[Candidate]:
        """Single-label intent classification: top-k intents with probabilities."""

    @abc.abstractmethod
    async def detect(self, text: str, *, deadline: float) -> list[Candidate]:
        """Multi-label detection: every label with its independent (sigmoid) score, top-k."""

    @abc.abstractmethod
    async def retrieve(self, text: str, *, deadline: float) -> list[Candidate]:
        """Embedding retrieval over the pack's training examples: best similarity per intent, top-k."""
