"""The language model's sections: `llm` (the Planner deployment's engine and how the engine uses it), `prompts`,
`hooks` and `compaction`."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from config.base import Section

LOCAL = "local"  # the in-cluster Planner deployment (this section's own engine settings), always known by this name
Purpose = Literal["planner", "social", "programs", "summariser"]
GENERATIVE: tuple[Purpose, ...] = ("social", "programs", "summariser")  # purposes whose text users read
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")  # a backend's name shows in routing_debug and in metrics labels
# headers that carry a credential: the key comes from `api_key_env`, never from the YAML
_CREDENTIAL_HEADERS = ("authorization", "api-key", "x-api-key", "proxy-authorization")


class LlmBackend(Section):
    """An OpenAI-compatible chat-completions endpoint (DashScope/Qwen, DeepSeek, Ollama, a vLLM elsewhere): seed 003's
    cloud layer. docs/llm-backends.md shows the few lines each takes."""

    base_url: str = Field(description="The API root the SDK appends /chat/completions to, e.g. https://host/v1.")
    model: str = Field(min_length=1, description="The model id the endpoint serves.")
    api_key_env: str = Field(
        default="",
        description="The NAME of the environment variable that holds the key, read once by the config loader in the "
        "replica that calls (never the key itself); empty: the endpoint needs none (Ollama, a private vLLM).",
    )
    timeout_s: float = Field(
        default=8.0, gt=0, description="The longest one call may take; the turn's deadline may cut it shorter."
    )
    max_concurrency: int = Field(
        default=4, gt=0, description="Calls in flight at once from one replica; past it a call falls back at once."
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="Extra request headers (no credential: that is `api_key_env`'s)."
    )
    json_schema: bool = Field(
        default=False,
        description="The endpoint honours `response_format: json_schema` (vLLM, recent OpenAI-style APIs): a plan is "
        "then constrained to the catalog's schema; else the prompt asks for JSON and validation checks it.",
    )
    generates: bool = Field(
        default=False,
        description="Trusted to write text users read (social replies, programs, summaries); a planner-only "
        "backend is false.",
    )
    temperature: float | None = Field(
        default=None, ge=0, le=2, description="None: llm.temperature for plans, 0.6 for replies (seed 003 §10.3)."
    )

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _a_name(cls, value: str) -> str:
        if value and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError("api_key_env is the name of an environment variable (e.g. DASHSCOPE_API_KEY), not a key")
        return value

    @field_validator("headers")
    @classmethod
    def _no_credentials(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if name.lower() in _CREDENTIAL_HEADERS:
                raise ValueError(f"header {name!r} carries a credential: name its variable in api_key_env instead")
        return value


class LlmUse(Section):
    """Per purpose, the backends tried in order (`local` or a name of `llm.backends`); the first that answers in time
    with a checked result wins, and when none does the turn keeps its local answer."""

    planner: list[str] = Field(
        default_factory=lambda: [LOCAL],
        description="After the local planners (template, heuristic): seed 003's LLM and cloud planner layers.",
    )
    social: list[str] = Field(
        default_factory=lambda: [LOCAL],
        description="Chit-chat and answerable requests outside the catalog (seed 003 §10.3, §28.3); `local` only "
        "with llm.generate_replies.",
    )
    programs: list[str] = Field(
        default_factory=lambda: [LOCAL], description="Seed 000/002's DSPy programs; `local` only with generate_replies."
    )
    summariser: list[str] = Field(
        default_factory=lambda: [LOCAL], description="Compaction's and the agents' summaries; `local` as programs."
    )

    def of(self, purpose: Purpose) -> list[str]:
        names: list[str] = getattr(self, purpose)
        return names


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
    backends: dict[str, LlmBackend] = Field(
        default_factory=dict,
        description="OpenAI-compatible endpoints by name (none by default: Baton runs offline); `local` is reserved.",
    )
    use: LlmUse = Field(default_factory=LlmUse, description="Which backends each purpose tries, in order.")

    @model_validator(mode="after")
    def _known_backends(self) -> LlmConfig:
        for name in self.backends:
            if name == LOCAL or not _NAME.match(name):
                raise ValueError(
                    f"llm.backends.{name}: a backend's name is 1-32 of a-z 0-9 _ - starting with a letter, "
                    f"and not {LOCAL!r} (the in-cluster Planner)"
                )
        for purpose in ("planner", *GENERATIVE):
            names = self.use.of(purpose)
            for name in names:
                if name != LOCAL and name not in self.backends:
                    raise ValueError(f"llm.use.{purpose} names {name!r}, which is not in llm.backends")
                if purpose in GENERATIVE and name != LOCAL and not self.backends[name].generates:
                    raise ValueError(
                        f"llm.use.{purpose} names {name!r}, whose text users would read: set "
                        f"llm.backends.{name}.generates: true, or leave it out"
                    )
            if len(set(names)) != len(names):
                raise ValueError(f"llm.use.{purpose} names a backend twice: {names}")
        return self

    def key_envs(self) -> dict[str, str]:
        """The environment variable each backend's key is read from, by backend name."""
        return {name: b.api_key_env for name, b in self.backends.items() if b.api_key_env}

    def chain(self, purpose: Purpose) -> list[str]:
        """The backends `purpose` tries, in order: for text users read, `local` only with `generate_replies`."""
        names = self.use.of(purpose)
        if purpose in GENERATIVE and not self.generate_replies:
            return [n for n in names if n != LOCAL]
        return list(names)

    @property
    def answers_outside_catalog(self) -> bool:
        """Whether a remote backend writes social replies: then a request outside the catalog is answered in its words
        (seed 003 §28.3), not refused by the template."""
        return any(n != LOCAL for n in self.chain("social"))

    @property
    def writes_replies(self) -> bool:
        """Whether any backend may write a social reply (the engine asks none otherwise)."""
        return bool(self.chain("social"))


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
    history_messages: int = Field(
        default=200,
        ge=0,
        description="The most messages of the user's conversation log the LLM planner reads as its history (what "
        "passes max_chars is then compacted); 0: only the session's last exchange.",
    )


class HookSpec(Section):
    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class HooksConfig(Section):
    """The chain, in order. The engine checks each name and its options against its hook registry when it builds the
    chain at start-up (engine/llm/hooks.py `build_chain`), so a typo fails there, naming the hook."""

    chain: list[HookSpec] = Field(default_factory=list)
