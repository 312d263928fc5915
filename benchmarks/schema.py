"""The shape of results.json, as pydantic models: the harness validates what it writes and the tests re-read it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Distribution(Strict):
    n: int = Field(gt=0)
    p50: float
    p90: float
    p95: float
    p99: float
    max: float
    mean: float


class ClientUse(Strict):
    cpu_share: float = Field(ge=0, description="Client process CPU time / wall time (1.0 = one core busy).")
    loadavg_1m: float = Field(ge=0)
    wall_s: float = Field(gt=0)


class LevelSummary(Strict):
    sent: int
    offered_rps: float
    status_counts: dict[str, int]
    ok: int
    throughput_rps: float
    good: int
    goodput_share: float = Field(ge=0, le=1)
    clean_goodput_share: float = Field(ge=0, le=1)
    goodput_rps: float
    clean_goodput_rps: float = Field(ge=0, description="Turns/s answered 200 within budget with no degraded stage.")
    good_degraded: int
    degraded_turns: int
    degraded_stages: dict[str, int]
    shed: int
    shed_without_retry_after: int
    server_errors_not_503: int
    lost: int
    client_wall_ms: Distribution | None
    shed_wall_ms: Distribution | None
    server_total_ms: Distribution | None
    stages_ms: dict[str, Distribution | None]
    by_kind: dict[str, int]
    client: ClientUse
    abandoned_turns: int


class Run(Strict):
    system: str
    level: float
    round: int
    summary: LevelSummary


class Spread(Strict):
    n: int
    median: float
    min: float
    max: float
    q1: float
    q3: float


class Ratio(Strict):
    pair: str
    client_p50: Spread | None
    client_p99: Spread | None
    goodput_rps: Spread | None


class BurstSummary(LevelSummary):
    offered_rps_target: float
    capacity_at_slo_rps: float | None
    accepted_rps: float
    accepted_in_budget_share: float | None = Field(
        ge=0,
        le=1,
        description="Accepted (200) turns with client wall ≤ budget, over all accepted; None when none was accepted.",
    )
    accepted_over_capacity: float | None
    max_wall_ms: float
    timeline: list[dict[str, int]]
    recovery_statuses: dict[str, int]
    system: str
    upscale_delay_s: float
    multiple: float
    capacity_measured_in_run: float | None
    capacity_source: str = Field(description="open_loop, main or none: the sweep whose capacity sized the burst.")
    note: str | None = None


class EncoderMeasurement(Strict):
    """One run of `python -m benchmarks.encoder_alone`."""

    runtime: str
    threads: int = Field(gt=0)
    torch_version: str
    encoder_path: str
    texts: int = Field(gt=0, description="Distinct utterances, cycled over the timed encodes.")
    load_s: float = Field(ge=0)
    batch1_ms: Distribution
    batch1_samples_ms: list[float] = Field(min_length=1)
    batch_size: int = Field(gt=1)
    batch_rounds_ms: list[float] = Field(min_length=1, description="Wall ms of each timed full batch.")
    per_sentence_ms: float = Field(gt=0, description="Median batch wall ms / batch_size.")
    ceiling_turns_per_s: float = Field(gt=0, description="1000 / per_sentence_ms.")
    loadavg_1m: float = Field(ge=0)
    measured_at: str


class EncoderPooled(Strict):
    sources: list[str]
    batch1_p50_ms: float = Field(gt=0)
    per_sentence_ms: float = Field(gt=0)
    ceiling_turns_per_s: float = Field(gt=0)
    end_over_start_batch1_p50: float | None
    end_over_start_per_sentence: float | None


class EncoderAloneReport(Strict):
    start: EncoderMeasurement
    end: EncoderMeasurement | None
    end_error: str | None = None
    pooled: EncoderPooled


class IdleSystem(Strict):
    turns: int
    ok: int
    status_counts: dict[str, int]
    degraded_turns: int
    client_wall_ms: Distribution | None
    server_total_ms: Distribution | None
    stages_p50_ms: dict[str, float]
    block_client_p50_ms: list[float]


class IdleReport(Strict):
    spec: dict[str, Any]
    order: list[list[str]]
    systems: dict[str, IdleSystem]


class OpenLoopReport(Strict):
    load: dict[str, Any]
    runs: list[Run] = Field(min_length=1)
    levels: dict[str, dict[str, LevelSummary]]


class BestGoodput(Strict):
    rps: float
    level: float


class SystemComparison(Strict):
    kind: str
    idle_client_p50_ms: float | None
    idle_over_encoder_batch1: float | None
    best_clean_goodput_rps: float | None
    best_clean_goodput_level: float | None
    clean_goodput_over_ceiling: float | None
    clean_goodput_over_monolith: float | None


class Comparisons(Strict):
    encoder_batch1_p50_ms: float | None
    encoder_ceiling_turns_per_s: float | None
    monolith: str | None
    systems: dict[str, SystemComparison]


class Machine(Strict):
    cores: int
    platform: str
    python: str
    loadavg_at_start: list[float]
    loadavg_at_end: list[float]


class Isolation(Strict):
    background_nice: int | None = Field(
        description="Runs before SCHED_IDLE: the niceness the systems not being measured "
        "waited at; None: not by niceness."
    )
    background: str | None = Field(
        default=None,
        description="The scheduling policy the systems not being measured waited "
        "under (SCHED_IDLE); None with background_nice None: no isolation.",
    )
    systems: list[str] = Field(default_factory=list, description="The systems the run started and isolated.")
    reason: str | None = Field(default=None, description="Why there was no isolation.")


class Result(Strict):
    scenario: dict[str, Any]
    mode: str
    load: dict[str, Any]
    git_commit: str
    pack: str
    systems: dict[str, dict[str, Any]]
    machine: Machine
    started_at: str
    finished_at: str
    budget_ms: float
    runs: list[Run] = Field(min_length=1)
    levels: dict[str, dict[str, LevelSummary]]
    capacity_at_slo: dict[str, float | None]
    capacity_by_round: dict[str, dict[str, float | None]]
    capacity_at_slo_without_degradation: dict[str, float | None]
    ratios: list[Ratio]
    bursts: list[BurstSummary]
    encoder_alone: EncoderAloneReport | None = None
    isolation: Isolation | None = None
    idle: IdleReport | None = None
    idle_more: dict[str, IdleReport] = Field(default_factory=dict, description="Further idle phases by mix kind.")
    open_loop: OpenLoopReport | None = None
    best_clean_goodput: dict[str, BestGoodput | None] = Field(
        default_factory=dict, description="Main sweep, per system."
    )
    open_loop_capacity_at_slo: dict[str, float | None] | None = None
    open_loop_capacity_at_slo_clean: dict[str, float | None] | None = None
    open_loop_ratios: list[Ratio] | None = None
    comparisons: Comparisons | None = None
    figures: list[str] = Field(default_factory=list)
