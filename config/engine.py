"""The engine's sections: fusion, the detector, clauses, the planner, slots, sessions, the WebSocket conversation, and
the test-only clock."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field, model_validator

from config.base import Section


class FusionConfig(Section):
    weights: dict[str, float] = Field(description="Weight of each matcher stage in the fused score.")
    accepted_bonus: float = Field(description="Added to a stage's selected intent when that stage accepted.")
    stage_accept: dict[str, float] = Field(description="Score at which a stage's top candidate counts as accepted.")
    execute_threshold: float
    route_to_cloud_threshold: float
    clarify_floor: float = Field(
        description="Below route_to_cloud a top task intent still gets a clarify question down to this score;"
        " lower is rejected."
    )
    clarify_margin: float
    classifier_execute_score: float
    classifier_execute_margin: float
    classifier_decides_at: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="A classifier top score at or above which its intent ranks first whatever the other stages add "
        "(None: the weighted sum alone). A built pack sets it from held-out folds (models/selection.py).",
    )
    max_clarify_options: int = 3


class DetectorConfig(Section):
    threshold: float = Field(description="Sigmoid score a label needs to count as detected (multi-clause text).")
    single_clause_threshold: float = Field(description="The score needed when the text is a single clause.")
    max_labels: int


class ClauseConfig(Section):
    pattern: str = Field(description="Regex of clause boundaries: punctuation and the joiners between two requests.")
    ordered: str = Field(description="Regex with groups `first` and `then` splitting one clause said as 先…再/后.")
    leading: str = Field(description="Regex of an ordering word opening a clause (先开窗，再…), removed from it.")
    min_chars: int = Field(ge=1, description="Shorter fragments are not clauses.")


class PlannerConfig(Section):
    """When the planner runs and how the heuristic planner scores a clause (seed 003 §15, §17)."""

    enabled: bool = Field(default=True, description="False: no planner stage; every turn keeps the fusion decision.")
    connectives: str = Field(description="Regex of a connective at a clause boundary (然后, 并且, 先…再 ...): plan.")
    conditional: str = Field(
        description="Regex of a clause that states a condition (如果…就 ...): its `action` group is the step."
    )
    parallel: str = Field(description="Regex of the joiners of parallel requests inside one clause (和, 跟 ...).")
    weights: dict[str, float] = Field(description="Weight per evidence: keyword, classifier, detector, example, slot.")
    accept: float = Field(gt=0, description="A clause's intent becomes a step when its fused score reaches this.")
    model_accept: float = Field(
        gt=0, le=1, description="Without lexical evidence, the classifier's clause score that suffices."
    )
    accept_unmarked: float = Field(
        gt=0,
        description="The score a step needs without a keyword of its own when nothing in the "
        "words marks several requests (the detector or fusion asked for the plan).",
    )
    elliptic: str = Field(
        description="Regex of a clause that is a verb alone (关掉, 打开一下): it acts on what the clause "
        "before named and is no request of its own."
    )
    state: str = Field(
        default="",
        description="Regex of a clause that reports a state (窗户开着呢, 镜子是折叠状态): it is the "
        "reason for a request, not one of its own. Empty: none is.",
    )
    max_steps: int = Field(ge=2)
    llm_min_evidence: float = Field(
        default=0.4,
        ge=0,
        description="An LLM plan's step needs a clause scoring its intent "
        "at least this (same scale as `accept`), or the plan "
        "does not run (engine/llm/grounding.py).",
    )


class PartialConfig(Section):
    """The partial-request rule (engine/partial.py): which clauses of a turn of several ask for an action outside the
    catalog, named in the reply while the doable ones run. Apart from `planner`, which the model build reads."""

    outside_min: float = Field(
        default=0.4,
        ge=0,
        le=1,
        description="A clause of a turn of several asks for something outside the catalog when the classifier's "
        "top for it is the out-of-scope class at this probability or more, and its words ask for an action "
        "(`request`) that is not a reason (`reason`): the reply names it as not done (engine/partial.py).",
    )
    request: str = Field(
        default="帮|请|麻烦|给我|把|[开关订买点查约叫发写打放找换拿办]",
        description="Regex of the words that make a clause ask for an action (帮我…, 把…打开, 订, 买 ...).",
    )
    reason: str = Field(
        default="^(?:因为|由于|既然|毕竟)|(?:了吧|死了|呢)$",
        description="Regex of a clause that gives a reason or an aside (因为…, 热死了): never named as not done.",
    )


class SlotConfig(Section):
    temperature_min: float
    temperature_max: float


class SessionConfig(Section):
    ttl_s: int = Field(description="An idle session is forgotten after this many seconds.")


class DefaultRange(Section):
    from_days: int = Field(description="Start: this many days from today's midnight (negative: in the past).")
    to_days: int = Field(description="End (exclusive): this many days from today's midnight.")

    @model_validator(mode="after")
    def _ordered(self) -> DefaultRange:
        if self.to_days <= self.from_days:
            raise ValueError("to_days must be after from_days")
        return self


class ConversationConfig(Section):
    """The WebSocket conversation (seed 002): frames, and the time range a request that names none acts on."""

    max_frame_bytes: int = Field(gt=0, description="A bigger frame is refused (dialogue.error frame_too_large).")
    recent_messages: int = Field(gt=0, description="Messages perception and execution read (seed 002: the last 20).")
    default_range: DefaultRange = Field(description="The range of a request that names no time and has no row below.")
    default_ranges: dict[str, DefaultRange] = Field(
        description="Per `agent.function`: the range a request naming no time acts on."
    )


class TestingConfig(Section):
    """Settings that exist for tests only; a deployment that requires tokens (any shared one) refuses them."""

    now: datetime | None = Field(
        default=None,
        description="Pins the app's calendar clock: the app starts at this instant (with its zone offset) "
        "and its clock runs on from there, so relative dates (明天, 这周) read the same on any "
        "day and at any hour. None: the real clock.",
    )
