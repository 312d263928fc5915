"""HTTP chat protocol (seed 003 §6): chat and fill-slots requests, the turn response and its debug parts."""
from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import Field, StrictStr

from protocol.base import WireModel
from protocol.media import InputModality, Recognition


class TurnStatus(str, Enum):
    completed = "completed"
    waiting_slot = "waiting_slot"
    waiting_confirmation = "waiting_confirmation"
    clarify = "clarify"
    rejected = "rejected"
    fallback = "fallback"
    social = "social"
    stopped = "stopped"
    decided = "decided"


def _client_message_id() -> Any:
    return Field(default=None, min_length=1, max_length=128,
                 description="Client idempotency key: a repeat returns the stored reply and runs nothing again.")


class ChatRequest(WireModel):
    """`text` turns need `text` and no `source_url`; `voice_asr` / `image_ocr` need `source_url` and no `text` (seed 002)."""

    session_id: StrictStr | None = Field(default=None, min_length=1, max_length=128)
    user_id: StrictStr = Field(min_length=1, max_length=128)
    text: StrictStr | None = None
    modality: InputModality = "text"
    source_url: StrictStr | None = Field(default=None, max_length=2048)
    client_message_id: StrictStr | None = _client_message_id()


class FillSlotsRequest(WireModel):
    session_id: StrictStr = Field(min_length=1, max_length=128)
    user_id: StrictStr = Field(min_length=1, max_length=128)
    text: StrictStr | None = None
    slots: dict[str, Any] | None = None
    client_message_id: StrictStr | None = _client_message_id()


class Candidate(WireModel):
    intent: str
    score: float


class StageDebug(WireModel):
    accepted: bool = False
    selected_intent: str | None = None
    score: float = 0.0
    candidates: list[Candidate] = Field(default_factory=list)
    latency_ms: float = 0.0
    degraded: bool = False
    error: str | None = None
    partial: bool = Field(default=False, description="Degraded but answered from part of its input (e.g. the n-gram model alone).")


class FusionDebug(WireModel):
    decision: str
    reason: str
    top_score: float = 0.0
    margin: float = 0.0
    ranked: list[Candidate] = Field(default_factory=list)


class RewriteDebug(WireModel):
    applied: bool = False
    original_text: str = ""
    rewritten_text: str = ""
    reason: str = ""


class RoutingDebug(WireModel):
    rewrite: RewriteDebug = Field(default_factory=RewriteDebug)
    stages: dict[str, StageDebug] = Field(default_factory=dict)
    fusion: FusionDebug | None = None
    detector: StageDebug | None = None


class Timings(WireModel):
    """Where a turn's time went. `total_ms` runs from the request's arrival at the ingress to the reply."""

    stages: dict[str, float] = Field(default_factory=dict, description="Time per canonical stage (ms).")
    spans_ms: dict[str, list[float]] = Field(default_factory=dict,
                                             description="Each stage's [start, end] in ms from arrival; parallel stages overlap.")
    total_ms: float = 0.0
    budget_ms: float = 0.0
    degraded: list[str] = Field(default_factory=list)


class TimeRange(WireModel):
    start: str
    end: str
    text: str
    all_day: bool


class Decision(WireModel):
    """What a turn decided when it does not execute a plugin itself (agents, multi-intent)."""

    intents: list[str]
    agent: str | None = None
    function: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    time_range: TimeRange | None = None


class ChatResponse(WireModel):
    session_id: str
    reply: str
    status: TurnStatus
    intent: str | None = None
    slots: dict[str, Any] = Field(default_factory=dict)
    pending_slots: list[str] = Field(default_factory=list)
    detected_intents: list[Candidate] = Field(default_factory=list)
    multi_intent: bool = False
    decision: Decision | None = None
    result: dict[str, Any] | None = None
    routing_debug: RoutingDebug = Field(default_factory=RoutingDebug)
    timings: Timings = Field(default_factory=Timings)
    recognized_text: str | None = None
    recognition: Recognition | None = None
