"""Domain pack schema and loader: intents, slots, rules and response templates as validated data."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

SOCIAL = "__social__"
OUT_OF_SCOPE = "__out_of_scope__"
SPECIAL_INTENTS = (SOCIAL, OUT_OF_SCOPE)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Risk(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


SlotType = Literal["temperature", "order_id", "destination", "datetime", "text", "number"]


class SlotSpec(Strict):
    name: str = Field(description="Slot name, used in templates as {name}.")
    type: SlotType = Field(description="Which extractor fills this slot.")
    required: bool = Field(default=True, description="Ask for it before executing when missing.")
    ask: str = Field(default="", description="Question asked when the slot is missing.")


class Intent(Strict):
    id: str
    label: str = Field(description="Human-readable Chinese name.")
    domain: str = Field(default="", description="Sub-domain, e.g. cabin, cs, schedule.")
    keywords: list[str] = Field(default_factory=list, description="Substrings that fire the keyword stage.")
    risk: Risk = Risk.low
    confirm: bool = Field(default=False, description="Execution needs an explicit confirmation.")
    plugin: str | None = Field(default=None, description="Plugin id executed for this intent.")
    agent: str | None = Field(default=None, description="Sub-agent that acts on this intent (decided only).")
    action: str | None = Field(default=None, description="Agent action (create/update/delete/query...).")
    slots: list[SlotSpec] = Field(default_factory=list)
    reply: str = Field(default="", description="Success reply template, formatted with slots and plugin data.")
    examples: list[str] = Field(description="Training split: the only examples heads and index see.")
    test_examples: list[str] = Field(default_factory=list, description="Held-out split, never trained on.")

    @model_validator(mode="after")
    def _splits_disjoint(self) -> Intent:
        overlap = set(self.examples) & set(self.test_examples)
        if overlap:
            raise ValueError(f"intent {self.id}: examples in both splits: {sorted(overlap)[:3]}")
        if self.plugin and self.agent:
            raise ValueError(f"intent {self.id}: bind either a plugin or an agent, not both")
        return self


class Sides(Strict):
    """The words that name one side of an opposite pair (展开 / 收起, 往大 / 往小, 锁上 / 解锁)."""

    words: dict[str, list[str]] = Field(
        default_factory=dict, description="Intent of an opposite pair → regexes of the words that ask for that side."
    )
    negations: list[str] = Field(
        default_factory=list, description="Words right before a side's words that take them back (别调大, 不是锁上)."
    )
    state: str = Field(
        "(?!)",
        description="Regex right after a side's words saying what is rather than what to do "
        "(折起来的镜子, 折叠状态): those words count for nothing.",
    )


class Rules(Strict):
    stop_words: list[str] = Field(default_factory=list, description="Phrases that stop the active task.")
    confirm_yes: list[str] = Field(default_factory=list)
    confirm_no: list[str] = Field(default_factory=list)
    social_patterns: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Social category (greeting, thanks, bye, capability) → regexes;"
        " reply is responses['social_<category>'].",
    )
    keyword_negations: list[str] = Field(
        default_factory=list,
        description="Words that take back a keyword said right after them (不用提醒我 asks no reminder): "
        "that occurrence is no keyword hit.",
    )
    ceasing: list[str] = Field(
        default_factory=list,
        description="Regexes of a request said as stopping its opposite (天窗别开着了, 座椅加热歇会儿, "
        "声音别那么大): the words name the 'on' side, the request is the 'off' side.",
    )
    opposites: dict[str, str] = Field(
        default_factory=dict,
        description="'On' intent → its 'off' intent, for `ceasing` (a turn whose words say ceasing and "
        "whose fused top is an 'on' intent is read as its 'off' intent) and `sides`.",
    )
    sides: Sides = Field(
        default_factory=Sides,
        description="The last words in a turn naming a side of an opposite pair "
        "decide between the pair over the models' reading.",
    )
    cues: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Intent → regexes of the words that ask for it (安排一个…: a new item). When routing is not sure, "
        "the one candidate whose cue the turn says is executed instead of asking which (engine/cues.py).",
    )

    cues_over: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Intent → intents whose cue outranks even a sure route to it, when its own cue is not said "
        "(我计划下个月底之前把论文写完: a goal's horizon asks for a plan, not one item), and its cue said beside it.",
    )
    reasons: list[str] = Field(
        default_factory=list,
        description="Regexes of a clause that only reports (客户说想换个时间: what someone said): the reason for "
        "another clause's request, no step of a plan and no cue of its own while another clause says one.",
    )

    @model_validator(mode="after")
    def _patterns_compile(self) -> Rules:
        named = [(f"rules.cues.{i}", p) for i, patterns in self.cues.items() for p in patterns]
        named += [("rules.ceasing", p) for p in self.ceasing] + [("rules.reasons", p) for p in self.reasons]
        named += [(f"rules.sides.words.{i}", p) for i, ps in self.sides.words.items() for p in [*ps, self.sides.state]]
        for where, pattern in named:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{where}: {pattern!r} is not a valid regex: {exc}") from exc
        return self


class Condition(Strict):
    """Compare `field` of the previous step's result data with `value` (seed 003 §21.1)."""

    field: str
    operator: Literal["equals", "not_equals", "in"]
    value: str | list[str]


class StepHint(Strict):
    depends_on_previous: bool = Field(default=False, description="Run only if the previous step ran.")
    condition: Condition | None = None
    requires_confirmation: bool = False


class WorkflowTemplate(Strict):
    """A fixed combination planned as is when the clauses name exactly these intents in this order (seed 003 §16)."""

    id: str
    type: Literal["sequence", "conditional"]
    intent_sequence: list[str] = Field(min_length=2)
    trigger_keywords: list[str] = Field(default_factory=list, description="All must occur in the text.")
    steps: list[StepHint] = Field(default_factory=list, description="Per step of intent_sequence (or none).")

    @model_validator(mode="after")
    def _steps_match(self) -> WorkflowTemplate:
        if self.steps and len(self.steps) != len(self.intent_sequence):
            raise ValueError(f"workflow {self.id}: steps must match intent_sequence one to one")
        return self


class ConditionalHint(Strict):
    """When `first` is followed by `then` and the text says one of `when_text`, `then` depends on `first`, runs
    only if the condition holds, and asks first (seed 003 §17.6)."""

    first: str
    then: str
    when_text: list[str] = Field(min_length=1)
    condition: Condition
    requires_confirmation: bool = True


class PlanExample(Strict):
    """An utterance and the plan the LLM planner should write for it (engine.llm.plan_schema's shape): shown to
    the model with the planning instruction. Checked against the catalog when the pack loads."""

    text: str = Field(min_length=1)
    plan: dict[str, Any]

    def step_intents(self) -> list[str]:
        steps = self.plan.get("steps")
        if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
            raise ValueError(f"plan example {self.text!r}: plan needs a non-empty list of steps")
        return [str(s.get("intent_id", "")) for s in steps]


class Workflows(Strict):
    templates: list[WorkflowTemplate] = Field(default_factory=list)
    conditional_hints: list[ConditionalHint] = Field(default_factory=list)
    value_labels: dict[str, str] = Field(
        default_factory=dict, description="How a result value is said, e.g. shipped: 已发货."
    )
    lead: list[str] = Field(
        default_factory=list,
        description="Intents planned first whatever the order said (seed 000: emotion support before the task).",
    )
    modules: dict[str, str] = Field(
        default_factory=dict,
        description="Intent -> the module of seed 000's pipeline (EmotionSupport, Scheduling, Summary ...).",
    )
    plan_examples: list[PlanExample] = Field(
        default_factory=list, description="Utterances with their plans, shown to the LLM planner."
    )

    def intent_ids(self) -> set[str]:
        ids = {i for t in self.templates for i in t.intent_sequence} | set(self.lead) | set(self.modules)
        ids |= {i for e in self.plan_examples for i in e.step_intents()}
        return ids | {i for h in self.conditional_hints for i in (h.first, h.then)}


class Pack(Strict):
    name: str
    description: str = ""
    rules: Rules = Rules()
    responses: dict[str, str] = Field(default_factory=dict, description="Named response templates.")
    intents: list[Intent]
    workflows: Workflows = Workflows()
    finetune: bool | None = Field(
        default=None,
        description="Tune the shared encoder on this pack's rows when it is built (models/finetune.py); None: "
        "models.finetune decides. A pack from a user's rows sets it (config/data_pack.yaml).",
    )
    serve_on: Literal["train_split", "all_rows"] = Field(
        default="train_split",
        description="Rows the served models learn from: the training split (the test split stays held out; a shipped "
        "pack's tests score it), or every row (a pack from a user's rows: its held-out figure comes from "
        "models built on the training split alone, kept beside the served ones).",
    )

    @model_validator(mode="after")
    def _unique_ids(self) -> Pack:
        ids = [i.id for i in self.intents]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate intent ids: {sorted(dupes)}")
        unknown = sorted(self.workflows.intent_ids() - set(ids))
        if unknown:
            raise ValueError(f"workflows.yaml names unknown intents: {unknown}")
        unknown = sorted({*self.rules.opposites, *self.rules.opposites.values()} - set(ids))
        if unknown:
            raise ValueError(f"rules.opposites names unknown intents: {unknown}")
        unknown = sorted(set(self.rules.cues) - set(ids))
        if unknown:
            raise ValueError(f"rules.cues names unknown intents: {unknown}")
        unpaired = sorted(set(self.rules.sides.words) - {*self.rules.opposites, *self.rules.opposites.values()})
        if unpaired:
            raise ValueError(f"rules.sides.words names intents without an opposite: {unpaired}")
        return self

    def intent(self, intent_id: str) -> Intent | None:
        return next((i for i in self.intents if i.id == intent_id), None)

    def known_intent(self, intent_id: str) -> Intent:
        """The intent of an id that came from this pack (a workflow step, a routed decision); KeyError if none."""
        intent = self.intent(intent_id)
        if intent is None:
            raise KeyError(f"the pack has no intent {intent_id!r}")
        return intent

    @property
    def intent_ids(self) -> list[str]:
        return [i.id for i in self.intents]

    def train_rows(self) -> list[tuple[str, str]]:
        return [(text, i.id) for i in self.intents for text in i.examples]

    def test_rows(self) -> list[tuple[str, str]]:
        return [(text, i.id) for i in self.intents for text in i.test_examples]

    def served_rows(self) -> list[tuple[str, str]]:
        return self.train_rows() + (self.test_rows() if self.serve_on == "all_rows" else [])


def load_pack(path: Path) -> Pack:
    """Load a pack folder: `pack.yaml` (name, rules, responses), every `intents/*.yaml` (a list of intents) and,
    if present, `workflows.yaml` (templates and conditional hints of the planner)."""
    head = yaml.safe_load((path / "pack.yaml").read_text(encoding="utf-8")) or {}
    intents: list[dict[str, Any]] = list(head.pop("intents", []) or [])
    for part in sorted((path / "intents").glob("*.yaml")):
        intents.extend(yaml.safe_load(part.read_text(encoding="utf-8")) or [])
    flows = path / "workflows.yaml"
    if flows.exists():
        head["workflows"] = yaml.safe_load(flows.read_text(encoding="utf-8")) or {}
    return Pack(**head, intents=intents)


def find_pack(name: str, *, shipped_dir: Path, state_dir: Path) -> Path:
    """A pack built by `make models DATA=...` under the state dir wins over a shipped one of the same name."""
    for candidate in (state_dir / "packs" / name / "source", shipped_dir / name):
        if (candidate / "pack.yaml").exists():
            return candidate
    raise FileNotFoundError(f"Pack '{name}' not found under {state_dir / 'packs'} or {shipped_dir}.")
