"""HTTP chat protocol (seed 003 §6): chat and fill-slots requests and the turn response; its debug parts are in
protocol.turn_debug, its workflow in protocol.workflow, the chat-stream events in protocol.chat_stream."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import ConfigDict, Field

from protocol.agent_turn import AgentTurn
from protocol.base import WireModel
from protocol.media import FileType, InputModality, Recognition, source_url_pattern
from protocol.strings import PlainStr, SlotsObject, TurnText
from protocol.turn_debug import Candidate, RoutingDebug, Timings
from protocol.workflow import NotDone, Workflow


class TurnStatus(StrEnum):
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
    slots: SlotsObject | None = None
    client_message_id: PlainStr | None = _client_message_id()


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


class ClarifyOption(WireModel):
    """One intent a `clarify` turn offers: answer with its `label` (or `value`), or say what the request lacked."""

    value: str = Field(description="The intent id.")
    label: str = Field(description="Its name, as the question says it.")


class ChatResponse(WireModel):
    session_id: str
    reply: str
    status: TurnStatus
    intent: str | None = None
    slots: dict[str, Any] = Field(default_factory=dict)
    pending_slots: list[str] = Field(default_factory=list)
    options: list[ClarifyOption] = Field(
        default_factory=list,
        description="A `clarify` turn: the intents it asks to choose among. The answer (fill-slots) may name one, or "
        "give what the request was missing (a time), which settles it.",
    )
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
    agent: AgentTurn | None = Field(
        default=None,
        description="On a pack with agents (timeflow): what the sub-agents did — a write waiting for its "
        "confirmation, a selection, a clarification, each step's result.",
    )
    not_done: list[NotDone] = Field(
        default_factory=list,
        description="The parts of a request partly outside the catalog that were not done, in the order said; the "
        "reply names them too. Empty when everything asked was done or asked about, and on a refusal (`rejected`: "
        "the whole request is outside the catalog).",
    )


class HealthStatus(WireModel):
    """GET /health: `ok` once every stage answers warm; `starting` and the reason before that."""

    status: Literal["ok", "starting"]
    pack: str | None
    reason: str | None = None
