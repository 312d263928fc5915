"""What each model deployment computes, keyed by kind: the fused NLU, the split encoder and heads, ASR and OCR.

A `Work` is built once per replica from the settings; `serve_app.replicas.model.ModelReplica` runs it the same way
for every kind (deadline drop, fault injection, batching, threads, counters).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from config.settings import Settings
from deployments.embedding import RunControl
from deployments.media_source import build_media_recognizer
from deployments.nlu import NluItem, build_nlu, shared_heads
from engine.model_client import ENCODER, HEADS, NLU_STAGES

Run = Callable[[list[Any], RunControl, frozenset[str]], list[Any]]


@dataclass(frozen=True)
class Work:
    stages: tuple[str, ...]  # fault-injection stages it covers; the first names the replica's stage
    run: Run  # a batch of items → one result each
    max_batch_size: int
    warmup: Callable[[], object]  # the model's own warm-up, run on a batch thread
    warmup_items: list[Any] = field(default_factory=list)  # then pushed through the whole replica path
    partial_failures: bool = False  # injected errors reach `run` (per head) instead of failing the call
    counters: Callable[[], dict[str, int]] = dict

    @property
    def stage(self) -> str:
        return self.stages[0]


WARMUP_ITEMS = [NluItem("打开车窗然后播放音乐", ("打开车窗", "播放音乐")), NluItem("把空调调到二十二度")]


def _counters(model: object) -> Callable[[], dict[str, int]]:
    encoder = getattr(model, "encoder", None)
    return (lambda: dict(encoder.counts)) if encoder is not None else dict


def _nlu(settings: Settings) -> Work:
    model = build_nlu(settings)
    return Work(
        stages=NLU_STAGES,
        run=lambda items, control, fail: model.analyze(items, control, fail),
        max_batch_size=settings.models.max_batch_size,
        warmup=model.warmup,
        warmup_items=WARMUP_ITEMS,
        partial_failures=True,
        counters=_counters(model),
    )


def _encoder(settings: Settings) -> Work:
    model = build_nlu(settings, parts=(ENCODER,))
    return Work(
        stages=(ENCODER,),
        run=lambda items, control, fail: model.encode(items, control),
        max_batch_size=settings.models.max_batch_size,
        warmup=lambda: model.encode(WARMUP_ITEMS),
        warmup_items=WARMUP_ITEMS,
        counters=_counters(model),
    )


def _head(name: str) -> Callable[[Settings], Work]:
    def build(settings: Settings) -> Work:
        model = build_nlu(settings, parts=(name,))
        reads_shared = name in shared_heads(settings.models)

        def run(pairs: list[tuple[Any, NluItem]], control: RunControl, fail: frozenset[str]) -> list[Any]:
            vectors = [v for v, _ in pairs] if reads_shared else None
            return model.head(name, [item for _, item in pairs], vectors)

        if reads_shared:
            import numpy as np

            probe: list[tuple[Any, NluItem]] = [
                (np.zeros((len(i.texts), model.input_dim(name)), dtype=np.float32), i) for i in WARMUP_ITEMS
            ]
        else:
            probe = [(None, i) for i in WARMUP_ITEMS]
        return Work(
            stages=(name,),
            run=run,
            max_batch_size=settings.models.max_batch_size,
            warmup=lambda: run(probe, RunControl(), frozenset()),
            warmup_items=probe,
        )

    return build


def _media(stage: str) -> Callable[[Settings], Work]:
    def build(settings: Settings) -> Work:
        recognizer = build_media_recognizer(stage, settings, warm=False)
        return Work(
            stages=(stage,),
            run=lambda items, control, fail: [recognizer.recognize(k, u) for k, u in items],
            max_batch_size=1,
            warmup=recognizer.warmup,
        )

    return build


WORKS: dict[str, Callable[[Settings], Work]] = {
    "nlu": _nlu,
    "encoder": _encoder,
    **{h: _head(h) for h in HEADS},
    "asr": _media("asr"),
    "ocr": _media("ocr"),
}
