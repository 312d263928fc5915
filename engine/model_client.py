"""The one interface through which the engine calls the text models; Ray handles and in-process models implement it.

A turn makes one call: the encoder embeds the text and its clauses once, and the classifier, detector and
retriever heads read those vectors. Whether that is one replica (the fused layout), an encoder deployment
feeding three head deployments (split), or a thread of this process (the monolith) is the implementation's
business; the engine sees one awaitable outcome per stage.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable
from dataclasses import dataclass, field

from protocol.turn_debug import Candidate

ENCODER = "encoder"
HEADS = ("classifier", "detector", "retriever")
NLU_STAGES = (ENCODER, *HEADS)


class StageError(Exception):
    """A model stage failed (the replica raised, shed the request, was unreachable, or its input failed)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage


@dataclass(frozen=True)
class NluRequest:
    """What one turn asks of the text models.

    `clauses` are embedded beside `text` in the same pass (empty for a single clause); `deadlines` holds each
    stage's absolute deadline (epoch seconds), so a replica can drop work whose answer would come too late.
    """

    text: str
    clauses: tuple[str, ...]
    deadlines: dict[str, float]

    @property
    def texts(self) -> list[str]:
        return [self.text, *self.clauses]


@dataclass(frozen=True)
class StageOutcome:
    """One stage's answer and when it ran (epoch seconds), as the implementation observed it.

    `partial` names what the answer lacks when it was made without part of its input (e.g. the classifier's
    n-gram model alone when the encoder failed); such an outcome counts as degraded but keeps its candidates.
    `clauses` holds the head's candidates for each of the request's clauses (classifier and detector); the
    encoder's outcome carries the turn text's `vector` (semantic memory reuses it: no second pass).
    """

    candidates: list[Candidate] = field(default_factory=list)
    clauses: tuple[list[Candidate], ...] = ()
    started: float = 0.0
    finished: float = 0.0
    partial: str | None = None
    vector: tuple[float, ...] | None = None


class NluCall(abc.ABC):
    """One started call. `outcome(stage)` may be awaited once per stage; it raises StageError on failure."""

    @abc.abstractmethod
    def outcome(self, stage: str) -> Awaitable[StageOutcome]: ...

    @abc.abstractmethod
    def cancel(self) -> None:
        """Stop whatever is still running (called when the turn gives up on a stage)."""


class ModelClient(abc.ABC):
    """Starts a turn's text-model call. Implementations must start the work at once, cancel it in the
    replica on `cancel()`, and never block the event loop."""

    @abc.abstractmethod
    def understand(self, request: NluRequest) -> NluCall: ...
