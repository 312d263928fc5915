"""The models' sections: the shared encoder and its heads, and the build-time tune and selection."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from config.base import Section

NLU_HEADS = ("classifier", "detector", "retriever")


class HeadConfig(Section):
    input: Literal["shared_embedding", "text"] = Field(
        default="shared_embedding",
        description="shared_embedding: the head reads the turn's one encoder pass;"
        " text: it reads the text with its own checkpoint.",
    )
    checkpoint: str = Field(
        default="",
        description="With input text: the classifier's HF sequence-classification folder"
        " (e.g. a fine-tuned bert-base-chinese); for the detector or retriever an encoder folder"
        " (the pack's head is built on its vectors). Empty = the shared encoder.",
    )


class TuneConfig(Section):
    """The build-time fine-tune of the shared encoder (models/finetune.py): fixed here, not searched."""

    epochs: float = Field(gt=0, description="Passes over the pack's rows when tuning the served encoder.")
    frozen_layers: int = Field(
        ge=0, description="Lower transformer layers kept as bootstrapped (their output is computed once)."
    )
    learning_rate: float = Field(gt=0, description="AdamW learning rate of the tuned layers.")
    head_learning_rate: float = Field(
        gt=0, description="Learning rate of the softmax head the layers are tuned through."
    )
    batch_size: int = Field(gt=0)
    max_tokens: int = Field(
        gt=0, description="Texts are cut to this many tokens while tuning (serving reads them whole)."
    )
    label_smoothing: float = Field(default=0.0, ge=0, lt=1, description="Cross-entropy label smoothing while tuning.")
    min_steps: int = Field(
        default=0, ge=0, description="Optimizer steps at least, whatever `epochs` gives a small pack ..."
    )
    max_epochs: float = Field(default=20.0, gt=0, description="... but never more passes than this over its rows.")
    contrastive_weight: float = Field(
        default=0.0, ge=0, description="Weight of the supervised contrastive loss beside the cross-entropy; 0 = none."
    )
    contrastive_temperature: float = Field(default=0.1, gt=0, description="Its temperature on cosine similarities.")
    seed: int = 0
    threads: int = Field(default=0, ge=0, description="Torch threads while tuning; 0 = every core.")


class SelectionConfig(Section):
    """Cross-validation on the pack's training rows (models/selection.py): the folds' choices and their cheaper tune."""

    folds: int = Field(ge=2, description="Stratified folds; each is scored by models built without it.")
    fold_epochs: float = Field(gt=0, description="Tuning passes of each fold's encoder.")
    fold_frozen_layers: int = Field(
        ge=0, description="Frozen lower layers of each fold's encoder (at least tune.frozen_layers)."
    )
    min_rows: int = Field(
        default=40, gt=0, description="Fewer training rows: no selection, the configured values serve."
    )
    frozen: bool = Field(
        default=False,
        description="Choose for a pack served on the frozen encoder too (its folds share the "
        "encoder's vectors: a logistic head per fold, seconds).",
    )
    ngram_weights: list[float] = Field(
        min_length=1, description="Shares of the n-gram model in the classifier ensemble tried."
    )
    retriever_weights: list[float] = Field(min_length=1, description="Fusion weights of the retriever tried.")
    classifier_decides_at: list[float | None] = Field(
        min_length=1, description="Scores at which a confident classifier decides tried (None: never)."
    )
    accept_unmarked: list[float] = Field(
        default_factory=list,
        description="Values of `planner.accept_unmarked` tried, the "
        "least that keeps single commands single chosen (models/unmarked_plans.py); "
        "empty: the configured one serves.",
    )
    max_unmarked_plans: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="The share of the folds' single commands that "
        "may be planned into a workflow at the chosen `accept_unmarked`.",
    )


class ModelsConfig(Section):
    encoder: str = Field(
        default="",
        description="HF / sentence-transformers path; empty = the bootstrapped e5-small under the state dir.",
    )
    encoder_runtime: Literal["torch", "onnx"] = Field(
        description="onnx: onnxruntime (export made once; cuda needs onnxruntime-gpu); torch: any device."
    )
    device: str = Field(
        default="cpu",
        pattern=r"^(cpu|cuda(:[0-9]+)?)$",
        description="Device of the encoder and the text-input heads (cpu, cuda, cuda:1...).",
    )
    heads: dict[str, HeadConfig] = Field(
        default_factory=dict, description="Per head (classifier, detector, retriever): its input."
    )
    finetune: bool = Field(
        default=False,
        description="Tune the shared encoder on a pack's rows when the pack is built, choose "
        "the heads' and fusion's settings on held-out folds; false: the frozen "
        "encoder and the values below. A pack's own `finetune` wins.",
    )
    tune: TuneConfig
    selection: SelectionConfig
    ngram_weight: float = Field(ge=0, le=1, description="Share of the char n-gram model in the classifier ensemble.")
    classifier_c: float = Field(gt=0, description="Inverse L2 strength of both classifier heads.")
    retriever_neighbors: int = Field(gt=0, description="Nearest training examples that vote in retrieval.")
    retriever_temperature: float = Field(gt=0, description="Softmax temperature over neighbour similarities.")
    threads: int = Field(gt=0, description="Intra-op threads of the encoder runtime in each model replica.")
    idle_threads: int = Field(
        default=0,
        ge=0,
        description="onnx: intra-op threads of a pass that finds its replica quiet "
        "(one turn, no pass for `idle_after_ms`); 0 = always `threads`.",
    )
    idle_nice: int = Field(
        default=19,
        ge=0,
        le=19,
        description="onnx, Linux: niceness of the quiet session's worker "
        "threads, which spin for tens of ms after a pass.",
    )
    idle_park: bool = Field(
        default=True,
        description="onnx, Linux: between passes those workers wait under SCHED_IDLE, so "
        "their spin gives way at once to any thread that wakes; off: nice only.",
    )
    idle_after_ms: float = Field(
        default=75.0,
        ge=0,
        description="How long the encoder must have been without a pass for "
        "the next single-turn pass to count as quiet.",
    )
    encode_batch_size: int = Field(gt=0, description="Texts per forward pass when a batch is larger.")
    max_batch_size: int = Field(gt=0, description="Turns one replica batch may hold (1 = no batching).")
    max_concurrent_batches: int = Field(
        default=1, gt=0, description="Batches a replica runs at once (each on its own thread)."
    )
    noop: bool = Field(
        default=False, description="Benchmark only: every model call answers at once with no candidates."
    )

    @model_validator(mode="after")
    def _known_heads(self) -> ModelsConfig:
        unknown = sorted(set(self.heads) - set(NLU_HEADS))
        if unknown:
            raise ValueError(f"models.heads: unknown head {unknown[0]!r}; heads are {', '.join(NLU_HEADS)}.")
        return self

    @model_validator(mode="after")
    def _fold_freezes_at_least_the_tune(self) -> ModelsConfig:
        if self.selection.fold_frozen_layers < self.tune.frozen_layers:
            raise ValueError(
                f"models.selection.fold_frozen_layers ({self.selection.fold_frozen_layers}) must be at least "
                f"models.tune.frozen_layers ({self.tune.frozen_layers}): the folds reuse the tune's cached layers."
            )
        return self

    def head(self, name: str) -> HeadConfig:
        return self.heads.get(name) or HeadConfig()
