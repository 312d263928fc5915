"""The language model's sections: `llm` (the Planner deployment's engine and how the engine uses it), `prompts`,
`hooks` and `compaction`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from config.base import Section


class LlmConfig(Section):
    enabled: bool = Field(
        default=True,
        description="Turns the local planners did not accept escalate to the LLM planner "
        "(when the app deploys one; see the Serve config's `planner`).",
    )
    model_path: str = Field(
        default="",
        description="The model folder the Planner's vLLM engine loads; empty = the "
        "packaged gemma-3-270m converted under the state dir (make llm).",
    )
    served_model_name: str = Field(
        default="baton-planner", description="The model id /v1/models lists and /v1/chat/completions accepts."
    )
    threads: int = Field(default=1, gt=0, description="OpenMP threads of the engine's forward passes (CPU).")
    kv_cache_gib: int = Field(default=1, gt=0, description="KV cache the CPU engine reserves (GiB).")
    max_model_len: int = Field(default=2048, gt=0, description="Prompt plus answer, in tokens.")
    block_size: int = Field(
        default=32,
        gt=0,
        multiple_of=32,
        description="KV cache block (tokens): the prefix cache matches whole blocks, so a plan re-prefills at "
        "most this many tokens of the prompt it shares with the last one.",
    )
    enforce_eager: bool = Field(default=True, description="Skip torch.compile: loads in seconds, not minutes.")
    dtype: Literal["bfloat16", "float16", "float32", "auto"] = "bfloat16"
    plan_max_tokens: int = Field(default=160, gt=0, description="The longest plan the LLM planner may write.")
    reply_max_tokens: int = Field(
        default=48, gt=0, description="The longest generated reply (social, emotion, summary)."
    )
    generate_replies: bool = Field(
        default=False,
        description="Chit-chat replies and the agents' summaries from the LLM "
        "when they come in time (stages_ms.reply); else templates.",
    )
    memory_k: int = Field(
        default=3,
        ge=0,
        description="Earlier messages of the user recalled into the planner's prompt (semantic memory; 0 = none).",
    )
    memory_min_score: float = Field(
        default=0.85,
        ge=-1,
        le=1,
        description="Cosine a recalled message needs (the shared encoder's normalised vectors).",
    )
    hold_after_timeouts: int = Field(
        default=3,
        ge=0,
        description="After this many escalations in a row the LLM could "
        "not finish in its budget, turns stop escalating (they keep the local decision at once, "
        "`planner` degraded) until a probe finishes in time; 0 = always escalate.",
    )
    probe_every_s: float = Field(
        default=30.0,
        gt=0,
        description="While escalation is held, one turn in this many seconds "
        "escalates all the same, to see whether the LLM keeps up again.",
    )
    temperature: float = Field(default=0.0, ge=0, le=2)
    request_timeout_s: float = Field(
        default=30.0, gt=0, description="An external /v1/chat/completions request is aborted after this long."
    )
    max_request_tokens: int = Field(
        default=512, gt=0, description="The most max_tokens an external request may ask for."
    )


class PromptsConfig(Section):
    """Where a pack's prompt files live and how long the rendered system prompt may get."""

    dir: str = Field(default="prompts", description="Folder of the prompt files, relative to the pack folder.")
    max_chars: int = Field(
        default=8000,
        gt=0,
        description="A rendered system prompt longer than this is an error: "
        "it would crowd the conversation out of the context.",
    )


class CompactionConfig(Section):
    max_chars: int = Field(default=6000, gt=0, description="Budget: total content characters of the messages sent.")
    keep_recent: int = Field(default=6, ge=0, description="The last N messages, always kept verbatim.")
    summary_max_chars: int = Field(default=600, gt=0, description="The summary message is never longer than this.")
    summarizer_timeout_s: float = Field(default=3.0, gt=0, description="After this the extractive summary is used.")
    pin_system: bool = Field(default=True, description="A leading system message (the prompt) is kept, not summarised.")


class HookSpec(Section):
    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class HooksConfig(Section):
    """The chain, in order. The engine checks each name and its options against its hook registry when it builds the
    chain at start-up (engine/llm/hooks.py `build_chain`), so a typo fails there, naming the hook."""

    chain: list[HookSpec] = Field(default_factory=list)
