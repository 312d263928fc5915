"""Engine settings loaded from config/baton.yaml and config/budgets.yaml, validated once at start-up."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.budgets import ESCALATED, MEDIA_STAGE, STAGES, Budgets  # noqa: F401 — re-exported
from engine.llm.compaction import CompactionConfig
from engine.llm.config import LlmConfig
from engine.llm.hooks import HooksConfig
from engine.llm.prompts import PromptsConfig
from engine.media_settings import AsrConfig, MediaConfig, OcrConfig

NLU_HEADS = ("classifier", "detector", "retriever")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FusionConfig(Section):
    weights: dict[str, float] = Field(description="Weight of each matcher stage in the fused score.")
    accepted_bonus: float = Field(description="Added to a stage's selected intent when that stage accepted.")
    stage_accept: dict[str, float] = Field(description="Score at which a stage's top candidate counts as accepted.")
    execute_threshold: float
    route_to_cloud_threshold: float
    clarify_floor: float = Field(description="Below route_to_cloud a top task intent still gets a clarify question down to this score; lower is rejected.")
    clarify_margin: float
    classifier_execute_score: float
    classifier_execute_margin: float
    classifier_decides_at: float | None = Field(
        default=None, gt=0, le=1,
        description="A classifier top score at or above which its intent ranks first whatever the other stages add "
                    "(None: the weighted sum alone). A built pack sets it from held-out folds (models/selection.py).")
    max_clarify_options: int = 3


class DetectorConfig(Section):
    threshold: float = Field(description="Sigmoid score a label needs to count as detected (multi-clause text).")
    single_clause_threshold: float = Field(description="The score needed when the text is a single clause.")
    max_labels: int


class ClauseConfig(Section):
    pattern: str = Field(description="Regex of clause boundaries: punctuation and the joiners between two requests.")
    ordered: str = Field(description="Regex with groups `first` and `then` splitting one clause said as 先…再/后.")
    leading: str = Field(description="Regex of an ordering word opening a clause (先开窗，再…), removed from it.")
    min_chars: int = Field(ge=1, description="Shorter fragments are not clauses.")


class PlannerConfig(Section):
    """When the planner runs and how the heuristic planner scores a clause (seed 003 §15, §17)."""

    enabled: bool = Field(default=True, description="False: no planner stage; every turn keeps the fusion decision.")
    connectives: str = Field(description="Regex of a connective at a clause boundary (然后, 并且, 先…再 ...): plan.")
    conditional: str = Field(description="Regex of a clause that states a condition (如果…就 ...): its `action` group is the step.")
    parallel: str = Field(description="Regex of the joiners of parallel requests inside one clause (和, 跟 ...).")
    weights: dict[str, float] = Field(description="Weight per evidence: keyword, classifier, detector, example, slot.")
    accept: float = Field(gt=0, description="A clause's intent becomes a step when its fused score reaches this.")
    model_accept: float = Field(gt=0, le=1, description="Without lexical evidence, the classifier's clause score that suffices.")
    accept_unmarked: float = Field(gt=0, description="The score a step needs without a keyword of its own when nothing in the "
                                                     "words marks several requests (the detector or fusion asked for the plan).")
    elliptic: str = Field(description="Regex of a clause that is a verb alone (关掉, 打开一下): it acts on what the clause "
                                      "before named and is no request of its own.")
    state: str = Field(default="", description="Regex of a clause that reports a state (窗户开着呢, 镜子是折叠状态): it is the "
                                                "reason for a request, not one of its own. Empty: none is.")
    max_steps: int = Field(ge=2)
    llm_min_evidence: float = Field(default=0.4, ge=0, description="An LLM plan's step needs a clause scoring its intent "
                                                                   "at least this (same scale as `accept`), or the plan "
                                                                   "does not run (engine/llm/grounding.py).")


class SlotConfig(Section):
    temperature_min: float
    temperature_max: float


class SessionConfig(Section):
    ttl_s: int = Field(description="An idle session is forgotten after this many seconds.")


class HeadConfig(Section):
    input: Literal["shared_embedding", "text"] = Field(
        default="shared_embedding",
        description="shared_embedding: the head reads the turn's one encoder pass; text: it reads the text with its own checkpoint.")
    checkpoint: str = Field(
        default="",
        description="With input text: the classifier's HF sequence-classification folder (e.g. a fine-tuned bert-base-chinese); "
                    "for the detector or retriever an encoder folder (the pack's head is built on its vectors). Empty = the shared encoder.")


class TuneConfig(Section):
    """The build-time fine-tune of the shared encoder (models/finetune.py): fixed here, not searched."""

    epochs: float = Field(gt=0, description="Passes over the pack's rows when tuning the served encoder.")
    frozen_layers: int = Field(ge=0, description="Lower transformer layers kept as bootstrapped (their output is computed once).")
    learning_rate: float = Field(gt=0, description="AdamW learning rate of the tuned layers.")
    head_learning_rate: float = Field(gt=0, description="Learning rate of the softmax head the layers are tuned through.")
    batch_size: int = Field(gt=0)
    max_tokens: int = Field(gt=0, description="Texts are cut to this many tokens while tuning (serving reads them whole).")
    label_smoothing: float = Field(default=0.0, ge=0, lt=1, description="Cross-entropy label smoothing while tuning.")
    min_steps: int = Field(default=0, ge=0, description="Optimizer steps at least, whatever `epochs` gives a small pack ...")
    max_epochs: float = Field(default=20.0, gt=0, description="... but never more passes than this over its rows.")
    contrastive_weight: float = Field(default=0.0, ge=0, description="Weight of the supervised contrastive loss beside the cross-entropy; 0 = none.")
    contrastive_temperature: float = Field(default=0.1, gt=0, description="Its temperature on cosine similarities.")
    seed: int = 0
    threads: int = Field(default=0, ge=0, description="Torch threads while tuning; 0 = every core.")


class SelectionConfig(Section):
    """Cross-validation on the pack's training rows (models/selection.py): what the folds choose, and their cheaper tune."""

    folds: int = Field(ge=2, description="Stratified folds; each is scored by models built without it.")
    fold_epochs: float = Field(gt=0, description="Tuning passes of each fold's encoder.")
    fold_frozen_layers: int = Field(ge=0, description="Frozen lower layers of each fold's encoder (at least tune.frozen_layers).")
    min_rows: int = Field(default=40, gt=0, description="Fewer training rows: no selection, the configured values serve.")
    frozen: bool = Field(default=False, description="Choose for a pack served on the frozen encoder too (its folds share the "
                                                    "encoder's vectors: a logistic head per fold, seconds).")
    ngram_weights: list[float] = Field(min_length=1, description="Shares of the n-gram model in the classifier ensemble tried.")
    retriever_weights: list[float] = Field(min_length=1, description="Fusion weights of the retriever tried.")
    classifier_decides_at: list[float | None] = Field(min_length=1, description="Scores at which a confident classifier decides tried (None: never).")
    accept_unmarked: list[float] = Field(default_factory=list, description="Values of `planner.accept_unmarked` tried, the "
                                         "least that keeps single commands single chosen (models/unmarked_plans.py); "
                                         "empty: the configured one serves.")
    max_unmarked_plans: float = Field(default=0.0, ge=0, le=1, description="The share of the folds' single commands that "
                                      "may be planned into a workflow at the chosen `accept_unmarked`.")


class ModelsConfig(Section):
    encoder: str = Field(default="", description="HF / sentence-transformers path; empty = the bootstrapped e5-small under the state dir.")
    encoder_runtime: Literal["torch", "onnx"] = Field(description="onnx: onnxruntime (export made once; cuda needs onnxruntime-gpu); torch: any device.")
    device: str = Field(default="cpu", pattern=r"^(cpu|cuda(:[0-9]+)?)$",
                        description="Device of the encoder and the text-input heads (cpu, cuda, cuda:1...).")
    heads: dict[str, HeadConfig] = Field(default_factory=dict, description="Per head (classifier, detector, retriever): its input.")
    finetune: bool = Field(default=False, description="Tune the shared encoder on a pack's rows when the pack is built, choose "
                                                       "the heads' and fusion's settings on held-out folds; false: the frozen "
                                                       "encoder and the values below. A pack's own `finetune` wins.")
    tune: TuneConfig
    selection: SelectionConfig
    ngram_weight: float = Field(ge=0, le=1, description="Share of the char n-gram model in the classifier ensemble.")
    classifier_c: float = Field(gt=0, description="Inverse L2 strength of both classifier heads.")
    retriever_neighbors: int = Field(gt=0, description="Nearest training examples that vote in retrieval.")
    retriever_temperature: float = Field(gt=0, description="Softmax temperature over neighbour similarities.")
    threads: int = Field(gt=0, description="Intra-op threads of the encoder runtime in each model replica.")
    idle_threads: int = Field(default=0, ge=0, description="onnx: intra-op threads of a pass that finds its replica quiet "
                                                           "(one turn, no pass for `idle_after_ms`); 0 = always `threads`.")
    idle_nice: int = Field(default=19, ge=0, le=19, description="onnx, Linux: niceness of the quiet session's worker "
                                                               "threads, which spin for tens of ms after a pass.")
    idle_park: bool = Field(default=True, description="onnx, Linux: between passes those workers wait under SCHED_IDLE, so "
                                                      "their spin gives way at once to any thread that wakes; off: nice only.")
    idle_after_ms: float = Field(default=75.0, ge=0, description="How long the encoder must have been without a pass for "
                                                                "the next single-turn pass to count as quiet.")
    encode_batch_size: int = Field(gt=0, description="Texts per forward pass when a batch is larger.")
    max_batch_size: int = Field(gt=0, description="Turns one replica batch may hold (1 = no batching).")
    max_concurrent_batches: int = Field(default=1, gt=0, description="Batches a replica runs at once (each on its own thread).")
    noop: bool = Field(default=False, description="Benchmark only: every model call answers at once with no candidates.")

    @model_validator(mode="after")
    def _known_heads(self) -> "ModelsConfig":
        unknown = sorted(set(self.heads) - set(NLU_HEADS))
        if unknown:
            raise ValueError(f"models.heads: unknown head {unknown[0]!r}; heads are {', '.join(NLU_HEADS)}.")
        return self

    @model_validator(mode="after")
    def _fold_freezes_at_least_the_tune(self) -> "ModelsConfig":
        if self.selection.fold_frozen_layers < self.tune.frozen_layers:
            raise ValueError(f"models.selection.fold_frozen_layers ({self.selection.fold_frozen_layers}) must be at least "
                             f"models.tune.frozen_layers ({self.tune.frozen_layers}): the folds reuse the tune's cached layers.")
        return self

    def head(self, name: str) -> HeadConfig:
        return self.heads.get(name) or HeadConfig()


class AdmissionConfig(Section):
    max_in_flight_turns: int = Field(gt=0, description="Hard cap on turns one orchestrator replica runs at once.")
    headroom: float = Field(gt=0, le=1, description="Admit a turn only if its predicted time is within this share of its budget.")
    drift: float = Field(gt=0, lt=1, description="Per finished turn, how fast the estimate of unloaded time forgets a faster past.")
    smoothing: float = Field(gt=0, le=1, description="Weight of each finished turn in the moving averages: its depth's service time and what one turn ahead adds.")
    stale_s: float = Field(gt=0, description="A depth's average service time counts this long after its last turn; older, the depth is predicted from the ones below.")
    min_samples: int = Field(ge=1, description="A depth's average counts once this many recent turns measured it; before, the depth is predicted from the ones below.")
    outlier: float = Field(gt=1, description="A finished turn moves a moving average as if it took at most this many times that average.")


class ServingConfig(Section):
    admission: AdmissionConfig
    retry_after_s: int = Field(gt=0, description="Retry-After sent with a shed turn.")
    metrics_port: int = Field(ge=0, description="Prometheus exposition port of the orchestrator replica; 0 disables it.")
    metrics_host: str = Field(default="127.0.0.1", min_length=1,
                              description="Address the Prometheus listener binds (0.0.0.0 where a scraper reaches the node).")
    http_ingress: Literal["haproxy", "proxy"] = Field(
        description="haproxy: Ray Serve's high-throughput mode (HAProxy in front of replicas serving HTTP themselves); "
                    "proxy: Serve's Python HTTP proxy.")
    model_calls: Literal["grpc", "actor"] = Field(
        default="grpc", description="How the orchestrator calls the text models: grpc, straight to the replica's "
                                    "inter-deployment gRPC server (by value); actor, as a Ray actor task (by reference).")


class StoreConfig(Section):
    schema_name: str = Field(pattern=r"^[a-z_][a-z0-9_]{0,62}$", description="PostgreSQL schema holding Baton's tables.")
    pool_min: int = Field(ge=0, description="Connections each orchestrator replica keeps open.")
    pool_max: int = Field(gt=0, description="Connections each orchestrator replica may open.")
    connect_timeout_s: float = Field(gt=0)
    pool_acquire_timeout_s: float = Field(gt=0, description="Waiting longer for a free connection sheds the request (503 overloaded).")
    command_timeout_s: float = Field(gt=0, description="A statement running longer fails the request with 503.")
    session_lease_s: float = Field(gt=0, description="A turn's hold on its session; a crashed replica's hold lapses after this.")
    session_busy_wait_ms: float = Field(ge=0, description="How long a second turn on a busy session waits before 409 session_busy.")
    session_busy_poll_ms: float = Field(gt=0)
    write_request_ttl_s: int = Field(gt=0, description="A write request not decided within this expires.")
    clarification_ttl_s: int = Field(gt=0, description="An open clarification question expires after this.")
    recent_messages: int = Field(gt=0, description="Messages in a conversation snapshot.")
    page_limit_max: int = Field(gt=0)
    embedded_start_timeout_s: float = Field(gt=0)


class DefaultRange(Section):
    from_days: int = Field(description="Start: this many days from today's midnight (negative: in the past).")
    to_days: int = Field(description="End (exclusive): this many days from today's midnight.")

    @model_validator(mode="after")
    def _ordered(self) -> "DefaultRange":
        if self.to_days <= self.from_days:
            raise ValueError("to_days must be after from_days")
        return self


class ConversationConfig(Section):
    """The WebSocket conversation (seed 002): frames, and the time range a request that names none acts on."""

    max_frame_bytes: int = Field(gt=0, description="A bigger frame is refused (dialogue.error frame_too_large).")
    recent_messages: int = Field(gt=0, description="Messages perception and execution read (seed 002: the last 20).")
    default_range: DefaultRange = Field(description="The range of a request that names no time and has no row below.")
    default_ranges: dict[str, DefaultRange] = Field(description="Per `agent.function`: the range a request naming no time acts on.")


class AuthConfig(Section):
    token_ttl_s: int = Field(gt=0, description="Lifetime of an access token.")
    secret_env: str = Field(description="Env var holding the token signing secret; unset = one generated under the state dir.")
    algorithm: str = "HS256"
    require_token: bool = Field(
        default=False,
        description="true: the token-less local mode is off; chat, uploads, media reads and the WebSocket need a bearer token "
                    "(false: a request without one acts as the local user it names).")
    generate_secret: bool = Field(
        default=True,
        description="false: the secret must come from secret_env, so every replica on every node signs with the same one "
                    "(a cluster); true: without it one is generated once under the state dir (one machine).")
    min_secret_chars: int = Field(default=32, ge=16, description="A shorter signing secret refuses to start.")


class Settings(Section):
    pack: str
    timezone: str
    max_text_chars: int = Field(gt=0)
    top_k: int = Field(gt=0)
    fusion: FusionConfig
    detector: DetectorConfig
    clauses: ClauseConfig
    planner: PlannerConfig
    slots: SlotConfig
    session: SessionConfig
    models: ModelsConfig
    serving: ServingConfig
    store: StoreConfig
    auth: AuthConfig
    conversation: ConversationConfig
    prompts: PromptsConfig
    hooks: HooksConfig
    compaction: CompactionConfig
    llm: LlmConfig = LlmConfig()
    budgets: Budgets
    media: MediaConfig
    asr: AsrConfig
    ocr: OcrConfig
    state_dir: Path = Path("var")
    config_dir: Path = Path("config")

    @model_validator(mode="after")
    def _lease_outlasts_turns(self) -> "Settings":
        """A lease shorter than a turn could lapse mid-turn and let a second turn run the same session."""
        longest = max(self.budgets.turn_ms[m] for m in self.budgets.modalities()) + self.budgets.escalation_ms()
        if self.store.session_lease_s * 1000.0 <= longest:
            raise ValueError(f"store.session_lease_s is {self.store.session_lease_s:g} s; it must be longer than the longest "
                             f"turn budget ({longest / 1000:g} s, budgets.turn_ms, an escalation included).")
        return self

    @property
    def packs_dir(self) -> Path:
        return self.config_dir / "domains"

    @property
    def encoder_path(self) -> Path:
        return Path(self.models.encoder) if self.models.encoder else self.state_dir / "encoder" / "multilingual-e5-small"

    @property
    def media_dir(self) -> Path:
        return Path(self.media.store.local_dir) if self.media.store.local_dir else self.state_dir / "media"

    @property
    def whisper_path(self) -> Path:
        return Path(self.asr.model_path) if self.asr.model_path else self.state_dir / "whisper" / "base"

    @property
    def llm_path(self) -> Path:
        return Path(self.llm.model_path) if self.llm.model_path else self.state_dir / "llm" / "gemma-3-270m"

    def artifacts_dir(self, pack: str | None = None) -> Path:
        return self.state_dir / "packs" / (pack or self.pack) / "models"


def load_settings(config_dir: Path, env: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None) -> Settings:
    """Read both YAML files under `config_dir`; `overrides` (a Serve config's `args.overrides`: one deployment's devices,
    model paths, auth posture) are merged over them key by key, `budgets` included; then `BATON_PACK`,
    `BATON_STATE_DIR` and `BATON_METRICS_PORT` in `env` override."""
    env = env or {}
    raw = yaml.safe_load((config_dir / "baton.yaml").read_text(encoding="utf-8"))
    raw["budgets"] = yaml.safe_load((config_dir / "budgets.yaml").read_text(encoding="utf-8"))
    raw = merged(raw, overrides or {})
    raw["config_dir"] = config_dir
    if env.get("BATON_PACK"):
        raw["pack"] = env["BATON_PACK"]
    raw["state_dir"] = Path(env.get("BATON_STATE_DIR") or raw.get("state_dir") or "var")
    if env.get("BATON_METRICS_PORT"):
        raw["serving"]["metrics_port"] = int(env["BATON_METRICS_PORT"])
    return Settings(**raw)


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` laid on top: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value
    return out
