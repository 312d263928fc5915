"""GET /api/v1/metrics/summary: the live numbers of served turns over a recent window (the demo page polls it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from protocol.base import WireModel


class MetricsTotals(WireModel):
    """Counts since the counters started (the run, in the served app)."""

    turns: int
    shed: int
    degraded: int = Field(description="Degraded stages, counted once per stage per turn.")


class MetricsSummary(WireModel):
    scope: Literal["all_replicas", "process"] = Field(
        description=(
            "`all_replicas`: summed over every orchestrator replica of the run (any replica answers the same counts); "
            "`process`: this process only (the in-process monolith)."
        )
    )
    window_s: float = Field(description="The window the figures below cover, in seconds; 0 on the very first read.")
    turns: int = Field(description="Turns answered in the window, any status.")
    turns_per_s: float | None = Field(description="`turns` / `window_s`; null when the window is empty.")
    p50_ms: float | None = Field(
        description="Median server-side turn latency in the window, estimated from the "
        "histogram buckets; null without turns."
    )
    p99_ms: float | None = None
    latency_cap_ms: float = Field(
        description="The histogram's largest finite bucket: a percentile equal to it means 'at least this'."
    )
    shed: int = Field(description="Turns admission control refused in the window (503 `overloaded`).")
    degraded: dict[str, int] = Field(default_factory=dict, description="Stages that degraded in the window, by stage.")
    by_status: dict[str, int] = Field(default_factory=dict, description="Turns in the window by status.")
    errors: dict[str, int] = Field(default_factory=dict, description="Error answers in the window by code.")
    since_start: MetricsTotals
