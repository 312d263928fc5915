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


class Machine(Strict):
    cores: int
    platform: str
    python: str
    loadavg_at_start: list[float]
    loadavg_at_end: list[float]


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
    bursts: list[dict[str, Any]]
    figures: list[str] = Field(default_factory=list)
