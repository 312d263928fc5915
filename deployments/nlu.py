"""The text models of a turn composed: one encoder pass, then the classifier, detector and retriever heads on its
vectors.

`NluModel.analyze` is the fused layout's whole replica (and the monolith's in-process call); `encode` and
`head` are the same work split for the Encoder and head deployments. A head configured with `input: text`
reads the text with its own checkpoint instead, so it survives an encoder failure.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np

from config.models import ModelsConfig
from config.settings import Settings
from deployments.artifacts import encoder_for
from deployments.embedding import PassStopped, RunControl
from deployments.embedding_retriever import EmbeddingRetriever
from deployments.encoder import Encoder
from deployments.intent_classifier import IntentClassifier
from deployments.multi_intent_detector import MultiIntentDetector
from engine.model_client import ENCODER, HEADS
from protocol.turn_debug import Candidate

Scores = list[tuple[str, float]]


class InjectedFailure(Exception):
    pass


@dataclass(frozen=True)
class NluItem:
    """One turn's input: its text and the clauses embedded beside it."""

    text: str
    clauses: tuple[str, ...] = ()

    @property
    def texts(self) -> list[str]:
        return [self.text, *self.clauses]


@dataclass(frozen=True)
class HeadScores:
    """One head's answer for one turn: its ranking of the whole text and, for the heads that score clauses
    (classifier, detector), one ranking per clause, in the order of `NluItem.clauses` (the planner reads them)."""

    text: Scores
    clauses: tuple[Scores, ...] = ()


@dataclass
class NluAnswer:
    """Per head its ranked (intent, score) pairs and per clause the same (`clauses`); `errors` per stage that
    failed; `partial` per head that answered without part of its input; `ms` the batch's compute time per stage."""

    scores: dict[str, Scores] = field(default_factory=dict)
    clauses: dict[str, tuple[Scores, ...]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    partial: dict[str, str] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)
    vector: list[float] | None = None  # the text's shared embedding (the encoder's first row for the item)


def as_scores(candidates: list[Candidate]) -> Scores:
    return [(c.intent, c.score) for c in candidates]


def shared_heads(models: ModelsConfig) -> tuple[str, ...]:
    """The heads that read the turn's shared embedding; the others (`input: text`) read the text themselves."""
    return tuple(h for h in HEADS if models.head(h).input == "shared_embedding")


class NluModel:
    def __init__(
        self,
        *,
        encoder: Encoder | None,
        classifier: IntentClassifier | _Absent,
        detector: MultiIntentDetector | _Absent,
        retriever: EmbeddingRetriever | _Absent,
        own_encoders: dict[str, Encoder] | None = None,
        shared: Collection[str] = HEADS,
    ) -> None:
        self.encoder = encoder
        self.classifier = classifier
        self.detector = detector
        self.retriever = retriever
        self._own = own_encoders or {}
        # heads that read the turn's shared embedding (the classifier's text backend reads neither)
        self.shared_heads = tuple(h for h in HEADS if h in shared)

    def encode(self, items: list[NluItem], control: RunControl | None = None) -> list[np.ndarray]:
        """The split layout's Encoder deployment: one pass, one array of rows per turn."""
        assert self.encoder is not None
        return self.encoder.encode([i.texts for i in items], control)

    def input_dim(self, name: str) -> int:
        """The embedding width head `name` was built on."""
        return {
            "classifier": lambda: self.classifier.dim,
            "detector": lambda: self.detector.dim,
            "retriever": lambda: self.retriever.dim,
        }[name]()

    def head(self, name: str, items: list[NluItem], vectors: list[np.ndarray] | None) -> list[HeadScores]:
        """One head over a batch; `vectors` are the shared embedding (None for a head that reads text)."""
        if name in self._own:
            vectors = self._own[name].encode([i.texts for i in items])
        if name == "classifier":
            # every row at once: the text and each clause (the planner scores clauses with the same head)
            rows = [t for i in items for t in i.texts]
            stacked = np.concatenate(vectors) if vectors is not None and self.classifier.needs_vectors else None
            return _per_item(items, [as_scores(r) for r in self.classifier.classify(rows, stacked)])
        if name == "detector":
            return [
                HeadScores(as_scores(text), tuple(as_scores(c) for c in clauses))
                for text, clauses in self.detector.detect(list(vectors or []))
            ]
        if name == "retriever":
            return [HeadScores(as_scores(r)) for r in self.retriever.retrieve(np.stack([v[0] for v in vectors or []]))]
        raise ValueError(f"unknown head {name!r}")

    def analyze(
        self, items: list[NluItem], control: RunControl | None = None, fail: Collection[str] = ()
    ) -> list[NluAnswer]:
        """The fused layout: the encoder once, then every head. A head that fails does not fail the others;
        without the encoder the classifier answers from its text-reading part (marked partial). `fail` names
        stages to fail on purpose (fault injection)."""
        answers = [NluAnswer() for _ in items]
        shared, encoder_error = None, None
        if self.shared_heads:
            if self.encoder is None:
                raise ValueError(
                    f"heads {', '.join(self.shared_heads)} read the shared embedding but no encoder is loaded"
                )
            t0 = time.perf_counter()
            try:
                if ENCODER in fail:
                    raise InjectedFailure(f"injected failure in {ENCODER}")
                shared = self.encode(items, control)
                for a, rows in zip(answers, shared, strict=True):
                    a.vector = rows[0].tolist()
            except PassStopped:
                raise
            except Exception as exc:  # a failed encoder is a declared degradation, not a failed turn
                encoder_error = f"{type(exc).__name__}: {exc}"
            self._timed(answers, ENCODER, t0)
        for name in HEADS:
            t0 = time.perf_counter()
            reads_shared = name in self.shared_heads
            try:
                if name in fail:
                    raise InjectedFailure(f"injected failure in {name}")
                if reads_shared and shared is None:
                    if name != "classifier":
                        raise RuntimeError(f"no embedding: the encoder failed ({encoder_error})")
                    texts = [t for i in items for t in i.texts]
                    ranked = _per_item(items, [as_scores(r) for r in self.classifier.classify_text_only(texts)])
                    for a in answers:
                        a.partial[name] = f"n-gram model only: the encoder failed ({encoder_error})"
                else:
                    ranked = self.head(name, items, shared if reads_shared else None)
                for a, r in zip(answers, ranked, strict=False):
                    a.scores[name] = r.text
                    if r.clauses:
                        a.clauses[name] = r.clauses
            except Exception as exc:
                for a in answers:
                    a.errors[name] = f"{type(exc).__name__}: {exc}"
            self._timed(answers, name, t0)
        if encoder_error is not None:
            for a in answers:
                a.errors[ENCODER] = encoder_error
        return answers

    @staticmethod
    def _timed(answers: list[NluAnswer], stage: str, t0: float) -> None:
        ms = round((time.perf_counter() - t0) * 1000.0, 3)
        for a in answers:
            a.ms[stage] = ms

    def warmup(self) -> None:
        self.analyze([NluItem("打开车窗然后播放音乐", ("打开车窗", "播放音乐")), NluItem("把空调调到二十二度")])


def _per_item(items: list[NluItem], rows: list[Scores]) -> list[HeadScores]:
    """Rows ranked for every text of a batch (each item's text, then its clauses) regrouped per item."""
    out, at = [], 0
    for item in items:
        n = len(item.texts)
        out.append(HeadScores(rows[at], tuple(rows[at + 1 : at + n])))
        at += n
    return out


class NoopNlu:
    """Benchmark only (`models.noop`): the same calls, answered at once with no candidates, so the cost of the
    serving graph itself can be measured."""

    shared_heads = HEADS
    encoder = None

    def encode(self, items: list[NluItem], control: RunControl | None = None) -> list[np.ndarray]:
        return [np.zeros((len(i.texts), 1), dtype=np.float32) for i in items]

    def input_dim(self, name: str) -> int:
        """The embedding width head `name` was built on."""
        return 1  # the width of `encode`'s rows

    def head(self, name: str, items: list[NluItem], vectors: list[np.ndarray] | None) -> list[HeadScores]:
        return [HeadScores([]) for _ in items]

    def analyze(
        self, items: list[NluItem], control: RunControl | None = None, fail: Collection[str] = ()
    ) -> list[NluAnswer]:
        return [NluAnswer(scores={h: [] for h in HEADS}) for _ in items]

    def warmup(self) -> None:
        return None


def build_nlu(
    settings: Settings, *, parts: Collection[str] = (ENCODER, *HEADS), artifacts: Path | None = None
) -> NluModel | NoopNlu:
    """The configured text models, warmed up. `parts` limits what is loaded (a split deployment needs one part).
    The encoder is the one the pack's heads were built on: its own tuned encoder, or the shared one."""
    models = settings.models
    if models.noop:
        return NoopNlu()
    artifacts, top_k = artifacts or settings.artifacts_dir(), settings.top_k
    shared_encoder = encoder_for(artifacts, settings.encoder_path)
    own = {
        h: Encoder(
            path=Path(models.head(h).checkpoint or settings.encoder_path), cfg=models, state_dir=settings.state_dir
        )
        for h in ("detector", "retriever")
        if h in parts and models.head(h).input == "text"
    }
    classifier = IntentClassifier(artifacts=artifacts, cfg=models, top_k=top_k) if "classifier" in parts else None
    shared = shared_heads(models)
    shared_needed = any(h in parts for h in shared)
    encoder = (
        Encoder(path=shared_encoder, cfg=models, state_dir=settings.state_dir)
        if ENCODER in parts and (shared_needed or parts == (ENCODER,))
        else None
    )
    model = NluModel(
        encoder=encoder,
        classifier=classifier or _Absent("classifier"),
        detector=MultiIntentDetector(artifacts=artifacts, top_k=top_k) if "detector" in parts else _Absent("detector"),
        retriever=EmbeddingRetriever(artifacts=artifacts, cfg=models, top_k=top_k)
        if "retriever" in parts
        else _Absent("retriever"),
        own_encoders=own,
        shared=shared,
    )
    if set(parts) >= {ENCODER, *HEADS}:
        model.warmup()
    elif encoder is not None:
        encoder.warmup()
    return model


class _Absent:
    """A head this process did not load (a split deployment loads only its own part)."""

    needs_vectors = True

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> NoReturn:
        raise RuntimeError(f"this process did not load the {self._name}")
