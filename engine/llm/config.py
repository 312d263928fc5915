"""The language model's settings (baton.yaml `llm`): the Planner deployment's engine and how the engine uses it."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LlmConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(default=True, description="Turns the local planners did not accept escalate to the LLM planner "
                                                     "(when the app deploys one; see the Serve config's `planner`).")
    model_path: str = Field(default="", description="The model folder the Planner's vLLM engine loads; empty = the "
                                                    "packaged gemma-3-270m converted under the state dir (make llm).")
    served_model_name: str = Field(default="baton-planner", description="The model id /v1/models lists and "
                                                                        "/v1/chat/completions accepts.")
    threads: int = Field(default=1, gt=0, description="OpenMP threads of the engine's forward passes (CPU).")
    kv_cache_gib: int = Field(default=1, gt=0, description="KV cache the CPU engine reserves (GiB).")
    max_model_len: int = Field(default=2048, gt=0, description="Prompt plus answer, in tokens.")
    enforce_eager: bool = Field(default=True, description="Skip torch.compile: loads in seconds, not minutes.")
    dtype: Literal["bfloat16", "float16", "float32", "auto"] = "bfloat16"
    plan_max_tokens: int = Field(default=160, gt=0, description="The longest plan the LLM planner may write.")
    reply_max_tokens: int = Field(default=48, gt=0, description="The longest generated reply (social, emotion, summary).")
    generate_replies: bool = Field(default=False, description="Chit-chat replies and the agents' summaries from the LLM "
                                                              "when they come in time (stages_ms.reply); else templates.")
    memory_k: int = Field(default=3, ge=0, description="Earlier messages of the user recalled into the planner's prompt "
                                                         "(semantic memory; 0 = none).")
    memory_min_score: float = Field(default=0.85, ge=-1, le=1, description="Cosine a recalled message needs (the shared "
                                                                          "encoder's normalised vectors).")
    hold_after_timeouts: int = Field(default=3, ge=0, description="After this many escalations in a row the LLM could "
                                     "not finish in its budget, turns stop escalating (they keep the local decision at once, "
                                     "`planner` degraded) until a probe finishes in time; 0 = always escalate.")
    probe_every_s: float = Field(default=30.0, gt=0, description="While escalation is held, one turn in this many seconds "
                                                                "escalates all the same, to see whether the LLM keeps up again.")
    temperature: float = Field(default=0.0, ge=0, le=2)
    request_timeout_s: float = Field(default=30.0, gt=0, description="An external /v1/chat/completions request is "
                                                                     "aborted after this long.")
    max_request_tokens: int = Field(default=512, gt=0, description="The most max_tokens an external request may ask for.")
