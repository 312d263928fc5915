"""Scenario files (benchmarks/scenarios/*.yaml): utterance mix, arrival process, load levels, systems, SLO, burst.

Besides the main sweep a scenario may ask for the encoder timed alone (`encoder_alone`), a sequential
idle phase (`idle`) and an open-loop sweep after a closed-loop main sweep (`open_loop`).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ROOT = Path(__file__).resolve().parent.parent


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Turn(Spec):
    """One request of a conversation; follow-ups reuse the session id the first answer returned."""

    text: str | None = Field(default=None, description="What the user says.")
    endpoint: Literal["chat", "fill_slots"] = Field(default="chat", description="/api/v1/agent/chat or /fill-slots.")
    slots: dict[str, Any] | None = Field(default=None, description="Structured slot values (fill_slots only).")

    @model_validator(mode="after")
    def _has_content(self) -> Turn:
        if self.text is None and self.slots is None:
            raise ValueError("a turn needs 'text' or 'slots'")
        if self.endpoint == "chat" and self.text is None:
            raise ValueError("a chat turn needs 'text'")
        return self


class Kind(Spec):
    """One kind of traffic (single intent, slot filling, …): a weight and the conversations to draw from."""

    weight: float = Field(gt=0, description="Relative share of conversations of this kind.")
    conversations: list[list[Turn]] = Field(
        min_length=1, description="Each a list of turns; a bare string is one chat turn."
    )

    @field_validator("conversations", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        def turn(t: Any) -> Any:
            return {"text": t} if isinstance(t, str) else t

        return [[turn(c)] if not isinstance(c, list) else [turn(t) for t in c] for c in value]


class Process(StrEnum):
    poisson = "poisson"
    gamma = "gamma"
    closed = "closed"


class Arrival(Spec):
    process: Process = Field(
        default=Process.poisson, description="Open loop (poisson/gamma) at a turn rate, or closed loop."
    )
    gamma_cv: float = Field(
        default=2.0, gt=0, description="Coefficient of variation of gamma inter-arrivals (1 = Poisson)."
    )
    think_time_ms: float = Field(default=0.0, ge=0, description="Pause between a conversation's turns.")


class Load(Spec):
    levels: list[float] = Field(
        min_length=1, description="Offered turns/s (open loop) or concurrent sessions (closed loop)."
    )
    ramp_up_s: float = Field(default=2.0, ge=0, description="The rate rises linearly to the level over this time.")
    warmup_s: float = Field(default=5.0, ge=0, description="Turns sent before this are discarded (includes the ramp).")
    duration_s: float = Field(gt=0, description="Measured time after the warm-up.")
    repeats: int = Field(default=1, ge=1, description="Rounds over all systems (A B A B …) per level.")

    @model_validator(mode="after")
    def _ramp_in_warmup(self) -> Load:
        if self.ramp_up_s > self.warmup_s:
            raise ValueError("ramp_up_s must fit inside warmup_s so measured turns see the full rate")
        return self


class OpenLoop(Load):
    """An open-loop sweep run after the main one (same interleaving), e.g. for capacity at SLO after a closed loop."""

    arrival: Arrival = Field(default_factory=Arrival, description="Its own arrival process: poisson or gamma.")

    @model_validator(mode="after")
    def _open(self) -> OpenLoop:
        if self.arrival.process == Process.closed:
            raise ValueError("open_loop.arrival.process must be poisson or gamma, not closed")
        return self


class SystemSpec(Spec):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: Literal["baton", "monolith"]
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Dotted paths into config/baton.yaml, e.g. models.max_batch_size."
    )
    serve_config: str | None = Field(
        default=None,
        description="Baton only: Serve config relative to the repository root "
        "(default config/serve_local.yaml), e.g. config/serve_local_split.yaml.",
    )
    deployments: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per deployment of the serve config: dotted paths, e.g. autoscaling_config.upscale_delay_s.",
    )
    app_args: dict[str, Any] = Field(
        default_factory=dict,
        description="Baton only: the application's args over the serve config's, e.g. planner: none (no LLM deployed).",
    )

    @model_validator(mode="after")
    def _serve_config_exists(self) -> SystemSpec:
        if self.serve_config is None:
            return self
        if self.kind != "baton":
            raise ValueError(f"system {self.name!r}: serve_config applies to kind baton only")
        path = Path(self.serve_config)
        if path.is_absolute() or ".." in path.parts or path.suffix not in (".yaml", ".yml"):
            raise ValueError(
                f"system {self.name!r}: serve_config must be a .yaml path inside the repository, "
                f"got {self.serve_config!r}"
            )
        if not (ROOT / path).is_file():
            raise ValueError(f"system {self.name!r}: serve_config {self.serve_config!r} does not exist under {ROOT}")
        return self


class Idle(Spec):
    """Sequential turns, one at a time, each from a fresh user; systems interleaved in blocks (A B C, then C B A)."""

    kind: str = Field(
        default="single_intent", description="The mix kind whose utterances are sent (first turn of each conversation)."
    )
    rounds: int = Field(default=3, ge=1, description="Blocks per system; odd rounds run the systems in reverse order.")
    turns_per_block: int = Field(default=20, ge=1)
    warmup_turns: int = Field(default=3, ge=0, description="Turns per system sent first and discarded.")
    pause_ms: float = Field(default=100.0, ge=0, description="Pause after every turn.")
    settle_s: float = Field(
        default=20.0,
        ge=0,
        description="Wait this long once every system is up: the last one started "
        "may still be settling (its replicas' first work), which would slow the others' idle turns.",
    )
    freeze_others: bool = Field(
        default=True,
        description="Stop the other systems this run started (SIGSTOP) while a block "
        "runs, as nothing else runs when the encoder is timed alone "
        "(benchmarks.foreground); off: they wait under SCHED_IDLE.",
    )
    thaw_s: float = Field(
        default=1.0,
        ge=0,
        description="Wait this long after a system is let go on again, before its "
        "block: its timers that fell due while it was stopped fire first.",
    )
    block_warmup_turns: int = Field(
        default=1, ge=0, description="Turns sent and discarded at the start of every block."
    )


class EncoderAlone(Spec):
    """The encoder timed alone in its own process (the runtime Baton serves), at the start and end of the run."""

    threads: int = Field(default=2, gt=0, description="Intra-op threads of the encoder in the measuring process.")
    batch1_turns: int = Field(default=100, gt=0, description="Single-utterance encodes timed for the batch-1 latency.")
    batch_size: int = Field(default=32, gt=1, description="Batch size of the throughput rounds.")
    rounds: int = Field(
        default=10, gt=0, description="Timed batches; the cost per sentence is their median / batch_size."
    )
    warmup: int = Field(default=5, ge=0, description="Untimed encodes (batch 1 and full batches) after loading.")
    kind: str = Field(default="single_intent", description="The mix kind whose utterances are encoded.")


class Slo(Spec):
    budget_ms: float = Field(gt=0, description="A turn is good when HTTP 200 and client wall time ≤ this.")
    goodput_target: float = Field(
        default=0.99, gt=0, le=1, description="Capacity at SLO = highest level with this goodput share."
    )


class Burst(Spec):
    systems: list[str] = Field(min_length=1, description="Systems that take the burst, one after the other.")
    capacity_multiple: float = Field(
        default=10.0,
        gt=1,
        description="Offered rate as a multiple of each system's capacity at SLO "
        "(of the open-loop sweep when there is one, else of the main sweep).",
    )
    rate_rps: float | None = Field(
        default=None, gt=0, description="A fixed offered rate instead of the multiple of capacity."
    )
    duration_s: float = Field(default=60.0, gt=0)
    upscale_delay_s: float = Field(
        ge=0, description="Autoscaling upscale delay set on every model deployment of the burst system."
    )
    cooldown_s: float = Field(default=5.0, ge=0, description="Quiet time before the recovery probe.")
    recovery_turns: int = Field(
        default=20, ge=1, description="Sequential turns after the burst that must all answer 200."
    )


class Scenario(Spec):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str = ""
    pack: str = "cockpit"
    seed: int = 7
    client_timeout_s: float = Field(default=30.0, gt=0, description="A request unanswered after this counts as lost.")
    mix: str = Field(description="Mix file, relative to the scenario file.")
    arrival: Arrival = Field(default_factory=Arrival)
    load: Load
    slo: Slo
    systems: list[SystemSpec] = Field(min_length=1)
    burst: Burst | None = None
    quick: Load | None = Field(default=None, description="The load used by --quick (one short level).")
    open_loop: OpenLoop | None = Field(
        default=None, description="An open-loop sweep after the main sweep (skipped by --quick)."
    )
    idle: Idle | None = Field(
        default=None, description="A sequential idle phase before the sweeps (skipped by --quick)."
    )
    idle_more: list[Idle] = Field(
        default_factory=list,
        description="Further idle phases after the first, each of another "
        "mix kind (e.g. multi_intent); skipped by --quick.",
    )
    encoder_alone: EncoderAlone | None = Field(
        default=None, description="Time the encoder alone at start and end (skipped by --quick)."
    )

    @model_validator(mode="after")
    def _burst_system_known(self) -> Scenario:
        names = [s.name for s in self.systems]
        if len(set(names)) != len(names):
            raise ValueError(f"system names repeat: {names}")
        unknown = sorted(set(self.burst.systems) - set(names)) if self.burst else []
        if unknown:
            raise ValueError(f"burst.systems {unknown} are not among {names}")
        if (
            self.burst
            and self.burst.rate_rps is None
            and self.arrival.process == Process.closed
            and self.open_loop is None
        ):
            raise ValueError(
                "a burst sized on capacity needs a turn rate: with a closed-loop main sweep "
                "give open_loop (its capacity sizes the burst) or burst.rate_rps"
            )
        return self


class Mix(Spec):
    pack: str
    kinds: dict[str, Kind] = Field(min_length=1)

    def texts(self) -> list[str]:
        return [t.text for k in self.kinds.values() for c in k.conversations for t in c if t.text]


def load_scenario(path: Path) -> tuple[Scenario, Mix]:
    """Parse and validate a scenario file and the mix it names (which must hold the kinds its phases draw from)."""
    scenario = Scenario.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    mix = Mix.model_validate(yaml.safe_load((path.parent / scenario.mix).read_text(encoding="utf-8")))
    if mix.pack != scenario.pack:
        raise ValueError(f"{scenario.mix} is written for pack {mix.pack!r}, the scenario serves {scenario.pack!r}")
    for field, spec in (("idle", scenario.idle), ("encoder_alone", scenario.encoder_alone)):
        if spec is not None and spec.kind not in mix.kinds:
            raise ValueError(f"{field}.kind {spec.kind!r} is not a kind of {scenario.mix} ({', '.join(mix.kinds)})")
    return scenario, mix


def kind_texts(mix: Mix, kind: str) -> list[str]:
    """The first utterance of every conversation of one kind, in file order."""
    return [c[0].text for c in mix.kinds[kind].conversations if c[0].text]


def overlap_with_test_split(mix: Mix, test_texts: set[str]) -> list[str]:
    """Mix utterances that also appear in the pack's test split (they must not: it measures accuracy)."""
    return sorted(t for t in mix.texts() if t in test_texts)
