"""What a chat turn reports of itself: the routing stages, fusion, rewrite and planner debug, and its timings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from protocol.base import WireModel


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
    partial: bool = Field(
        default=False, description="Degraded but answered from part of its input (e.g. the n-gram model alone)."
    )


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


class ClauseDebug(WireModel):
    """One clause as the planner scored it: its fused candidates and the intents it chose (several = parallel)."""

    text: str
    candidates: list[Candidate] = Field(default_factory=list)
    selected: list[str] = Field(default_factory=list)


class LlmPlanDebug(WireModel):
    """What the LLM planner did: `outcome` accepted (its plan ran), rejected (it failed validation or named what the
    words do not say, and never ran), timed_out (aborted at the deadline), error, held (not asked: it missed its
    budget on the last calls, so the turn kept the local decision at once) or busy (the backend had as many calls in
    flight as it may: not asked, no wait); `reasons` say why not."""

    outcome: Literal["accepted", "rejected", "timed_out", "error", "held", "busy"]
    backend: str = Field(
        default="local", description="Which backend answered: `local` (the in-cluster Planner) or an llm.backends name."
    )
    request_id: str | None = None
    reasons: list[str] = Field(default_factory=list)
    normalisations: list[str] = Field(default_factory=list)
    ttft_ms: float | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, found in the engine's prefix cache (not prefilled again)
    completion_tokens: int = 0


class PlannerDebug(WireModel):
    """Why the planner ran, which planner accepted (none: the turn kept the fusion decision) and what it saw."""

    trigger: str
    accepted_by: str | None = None
    reason: str = ""
    clauses: list[ClauseDebug] = Field(default_factory=list)
    detector_prior: list[Candidate] = Field(default_factory=list)
    degraded: bool = False
    llm: LlmPlanDebug | None = Field(
        default=None,
        description="The LLM planner's call, when the local planners did not accept: the accepted one, else the last.",
    )
    llm_attempts: list[LlmPlanDebug] = Field(
        default_factory=list,
        description="Each LLM backend asked (llm.use.planner, in order) when more than one was, with its outcome.",
    )


class ReplyDebug(WireModel):
    """One backend asked to write a reply (seed 003 §10.3's social responder, seed 000's EmotionSupport): `outcome`
    generated (said), refused (it answered, the checks refused it), timed_out, error or busy; the template answers
    when no backend's reply was said."""

    purpose: Literal["social", "emotion"]
    backend: str
    outcome: Literal["generated", "refused", "timed_out", "error", "busy"]
    reason: str = ""


class RoutingDebug(WireModel):
    rewrite: RewriteDebug = Field(default_factory=RewriteDebug)
    stages: dict[str, StageDebug] = Field(default_factory=dict)
    fusion: FusionDebug | None = None
    detector: StageDebug | None = None
    planner: PlannerDebug | None = None
    replies: list[ReplyDebug] = Field(
        default_factory=list, description="The LLM backends asked to write this turn's reply (llm.use.social)."
    )


class Timings(WireModel):
    """Where a turn's time went. `total_ms` runs from the request's arrival at the ingress to the reply."""

    stages: dict[str, float] = Field(default_factory=dict, description="Time per canonical stage (ms).")
    spans_ms: dict[str, list[float]] = Field(
        default_factory=dict, description="Each stage's [start, end] in ms from arrival; parallel stages overlap."
    )
    total_ms: float = 0.0
    budget_ms: float = 0.0
    degraded: list[str] = Field(default_factory=list)
    escalated: bool = Field(
        default=False, description="The turn escalated to the LLM planner: budget_ms grew to say so."
    )
