"""Domain pack schema and loader: intents, slots, rules and response templates as validated data."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

SOCIAL = "__social__"
OUT_OF_SCOPE = "__out_of_scope__"
SPECIAL_INTENTS = (SOCIAL, OUT_OF_SCOPE)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Risk(str, Enum):
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
    def _splits_disjoint(self) -> "Intent":
        overlap = set(self.examples) & set(self.test_examples)
        if overlap:
            raise ValueError(f"intent {self.id}: examples in both splits: {sorted(overlap)[:3]}")
        if self.plugin and self.agent:
            raise ValueError(f"intent {self.id}: bind either a plugin or an agent, not both")
        return self


class Rules(Strict):
    stop_words: list[str] = Field(default_factory=list, description="Phrases that stop the active task.")
    confirm_yes: list[str] = Field(default_factory=list)
    confirm_no: list[str] = Field(default_factory=list)
    social_patterns: dict[str, list[str]] = Field(
        default_factory=dict, description="Social category (greeting, thanks, bye, capability) → regexes; reply is responses['social_<category>']."
    )


class Pack(Strict):
    name: str
    description: str = ""
    rules: Rules = Rules()
    responses: dict[str, str] = Field(default_factory=dict, description="Named response templates.")
    intents: list[Intent]

    @model_validator(mode="after")
    def _unique_ids(self) -> "Pack":
        ids = [i.id for i in self.intents]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate intent ids: {sorted(dupes)}")
        return self

    def intent(self, intent_id: str) -> Intent | None:
        return next((i for i in self.intents if i.id == intent_id), None)

    @property
    def intent_ids(self) -> list[str]:
        return [i.id for i in self.intents]

    def train_rows(self) -> list[tuple[str, str]]:
        return [(text, i.id) for i in self.intents for text in i.examples]

    def test_rows(self) -> list[tuple[str, str]]:
        return [(text, i.id) for i in self.intents for text in i.test_examples]


def load_pack(path: Path) -> Pack:
    """Load a pack folder: `pack.yaml` (name, rules, responses) plus every `intents/*.yaml` (a list of intents)."""
    head = yaml.safe_load((path / "pack.yaml").read_text(encoding="utf-8")) or {}
    intents: list[dict] = list(head.pop("intents", []) or [])
    for part in sorted((path / "intents").glob("*.yaml")):
        intents.extend(yaml.safe_load(part.read_text(encoding="utf-8")) or [])
    return Pack(**head, intents=intents)


def find_pack(name: str, *, shipped_dir: Path, state_dir: Path) -> Path:
    """A pack built by `make models DATA=...` under the state dir wins over a shipped one of the same name."""
    for candidate in (state_dir / "packs" / name / "source", shipped_dir / name):
        if (candidate / "pack.yaml").exists():
            return candidate
    raise FileNotFoundError(f"Pack '{name}' not found under {state_dir / 'packs'} or {shipped_dir}.")
