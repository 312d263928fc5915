"""HTTP chat protocol (seed 003 §6): chat and fill-slots requests, the turn response and its debug parts."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel

from protocol.base import ErrorBody, WireModel
from protocol.media import FileType, InputModality, Recognition, source_url_pattern
from protocol.strings import JsonObject, PlainStr, TurnText


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
    return Field(
        default=None,
        min_length=1,
        max_length=128,
        description="Client idempotency key: a repeat returns the stored reply and runs nothing again.",
    )


TEXT_DESCRIPTION = "Not blank, at most the configured `max_text_chars` characters (the served document says how many)."
_MEDIA_MODALITIES: tuple[tuple[InputModality, FileType], ...] = (("voice_asr", "audio"), ("image_ocr", "image"))


def _modality_table(schema: dict[str, Any]) -> None:
    # documented here, enforced by the engine (engine.media.check_modality), which names the offending field
    schema["anyOf"] = [
        {
            "properties": {"modality": {"const": "text"}, "text": {"type": "string"}, "source_url": {"type": "null"}},
            "required": ["text"],
        },
        *(
            {
                "properties": {
                    "modality": {"const": modality},
                    "text": {"type": "null"},
                    "source_url": {"type": "string", "pattern": source_url_pattern(kind)},
                },
                "required": ["modality", "source_url"],
            }
            for modality, kind in _MEDIA_MODALITIES
        ),
    ]


class ChatRequest(WireModel):
    """`text` turns need `text` and no `source_url`; `voice_asr` / `image_ocr` need the `source_url` of an upload of
    their kind (audio / image) and no `text` (seed 002)."""

    model_config = ConfigDict(json_schema_extra=_modality_table)

    session_id: PlainStr | None = Field(default=None, min_length=1, max_length=128)
    user_id: PlainStr = Field(min_length=1, max_length=128)
    text: TurnText | None = Field(default=None, description=TEXT_DESCRIPTION)
    modality: InputModality = "text"
    source_url: PlainStr | None = Field(default=None, max_length=2048)
    client_message_id: PlainStr | None = _client_message_id()


class FillSlotsRequest(WireModel):
    """Needs `text`, `slots` or both: the engine refuses a request with neither."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"text": {"type": "string"}}, "required": ["text"]},
                {"properties": {"slots": {"type": "object"}}, "required": ["slots"]},
            ]
        }
    )

    session_id: PlainStr = Field(min_length=1, max_length=128)
    user_id: PlainStr = Field(min_length=1, max_length=128)
    text: TurnText | None = Field(default=None, description=TEXT_DESCRIPTION)
    slots: JsonObject | None = None
    client_message_id: PlainStr | None = _client_message_id()


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
    words do not say, and never ran), timed_out (aborted at the deadline), error, or held (not asked: it missed its
    budget on the last calls, so the turn kept the local decision at once); `reasons` say why not."""

    outcome: Literal["accepted", "rejected", "timed_out", "error", "held"]
    request_id: str | None = None
    reasons: list[str] = Field(default_factory=list)
    normalisations: list[str] = Field(default_factory=list)
    ttft_ms: float | None = None
    prompt_tokens: int = 0
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
        default=None, description="The LLM planner's call, when the local planners did not accept."
    )


class RoutingDebug(WireModel):
    rewrite: RewriteDebug = Field(default_factory=RewriteDebug)
    stages: dict[str, StageDebug] = Field(default_factory=dict)
    fusion: FusionDebug | None = None
    detector: StageDebug | None = None
    planner: PlannerDebug | None = None


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


class WorkflowType(str, Enum):
    single = "single"
    sequence = "sequence"
    conditional = "conditional"


class WorkflowStatus(str, Enum):
    running = "running"
    waiting_slot = "waiting_slot"
    waiting_confirmation = "waiting_confirmation"
    completed = "completed"
    stopped = "stopped"


class StepStatus(str, Enum):
    pending = "pending"
    waiting_slot = "waiting_slot"
    waiting_confirmation = "waiting_confirmation"
    done = "done"
    skipped = "skipped"
    failed = "failed"


class StepCondition(WireModel):
    """Run the step only if `field` of `source_step`'s result data compares true against `value` (seed 003 §21.1)."""

    source_step: str
    field: str
    operator: Literal["equals", "not_equals", "in"]
    value: Any


class WorkflowStep(WireModel):
    step: int = Field(description="1-based position in the workflow.")
    step_id: str
    intent_id: str
    plugin_id: str | None = None
    agent: str | None = None
    action: str | None = None
    status: StepStatus = StepStatus.pending
    skip_reason: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    slots: dict[str, Any] = Field(default_factory=dict)
    condition: StepCondition | None = None
    requires_confirmation: bool = False
    clause: str = Field(default="", description="The words of the utterance this step came from.")
    result: dict[str, Any] | None = Field(
        default=None, description="The plugin's {success, message, data} once it ran."
    )


class Workflow(WireModel):
    type: WorkflowType
    status: WorkflowStatus = WorkflowStatus.running
    steps: list[WorkflowStep]
    step_results: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="step_id -> the plugin result's data."
    )
    summary: str = ""
    planner: str = Field(default="", description="The planner that produced it (template:<id>, heuristic).")


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
    workflow: Workflow | None = Field(
        default=None, description="Set whenever a workflow ran or is paused in this turn."
    )
    pipeline: list[str] = Field(
        default_factory=list, description="Seed 000's Router: the modules this turn runs, in order."
    )
    pipeline_description: str | None = Field(default=None, description="The pipeline in one to three sentences.")


class AckEvent(WireModel):
    """chat-stream: the turn is understood and its first plugin is about to run."""

    event: Literal["ack"] = "ack"
    reply: str
    workflow: Workflow | None = None
    escalated: bool = Field(
        default=False,
        description="Sent before the turn waits on the LLM planner; budget_ms is the turn's budget from then on.",
    )
    budget_ms: float | None = None


class StepEvent(WireModel):
    """chat-stream: one step finished (done, skipped or failed)."""

    event: Literal["step"] = "step"
    step: WorkflowStep


class FinalEvent(WireModel):
    """chat-stream: the turn's response, exactly what POST /api/v1/agent/chat would have answered."""

    event: Literal["final"] = "final"
    response: ChatResponse


class ErrorEvent(WireModel):
    """chat-stream: the turn failed after the stream began; the envelope's error."""

    event: Literal["error"] = "error"
    error: ErrorBody


class ChatStreamLine(
    RootModel[Annotated[AckEvent | StepEvent | FinalEvent | ErrorEvent, Field(discriminator="event")]]
):
    """One line of the chat-stream NDJSON body (for the document; the stream writes each event model itself)."""


class HealthStatus(WireModel):
    """GET /health: `ok` once every stage answers warm; `starting` and the reason before that."""

    status: Literal["ok", "starting"]
    pack: str | None
    reason: str | None = None
