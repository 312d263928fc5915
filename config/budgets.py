"""Latency budgets (config/budgets.yaml): the whole turn's per modality, each stage's, and the LLM escalation."""

from __future__ import annotations

from pydantic import Field, model_validator

from config.base import Section

MEDIA_STAGE = {"voice_asr": "asr", "image_ocr": "ocr"}
ESCALATED = "llm"  # budgets.turn_ms key: a text turn that escalates to the LLM planner (not a modality)
# Canonical stage names, in the order a turn meets them: `auth` (token or shadow user), `store` (stored-reply
# lookup, question expiry), `lease` (the session row, waiting included), the media and model stages, and
# `commit` (state, log and stored reply in one transaction).
STAGES = (
    "auth",
    "store",
    "lease",
    "asr",
    "ocr",
    "encoder",
    "keyword",
    "classifier",
    "detector",
    "retriever",
    "fusion",
    "planner",
    "planner_llm",
    "reply",
    "slots",
    "execute",
    "facts",
    "agent",
    "commit",
)


class Budgets(Section):
    turn_ms: dict[str, float] = Field(description="Whole-turn budget per input modality.")
    stages_ms: dict[str, float] = Field(description="Per-stage budget, keyed by canonical stage name.")
    batch_wait_share: float = Field(
        ge=0, le=1, description="Share of a stage budget a queued turn may wait for a second batch to start."
    )

    @model_validator(mode="after")
    def _stages_known(self) -> Budgets:
        unknown = sorted(set(self.stages_ms) - set(STAGES))
        if unknown:
            raise ValueError(f"stages_ms: {unknown[0]!r} is not a stage; stages are {', '.join(STAGES)}.")
        missing = [s for s in STAGES if s not in self.stages_ms]
        if missing:
            raise ValueError(f"stages_ms needs a budget for every stage; missing {', '.join(missing)}.")
        return self

    @model_validator(mode="after")
    def _commit_leaves_room(self) -> Budgets:
        """The commit's budget is held back from the model stages: it must leave most of every turn to them."""
        shortest = min(self.turn_ms.values())
        if self.stages_ms["commit"] >= shortest / 2:
            raise ValueError(
                f"stages_ms.commit ({self.stages_ms['commit']:g}) must be under half the shortest turn budget"
                f" ({shortest:g})."
            )
        return self

    @model_validator(mode="after")
    def _media_turns_add_up(self) -> Budgets:
        """A media turn's budget is its media stage budget plus the text-turn budget."""
        for modality, stage in MEDIA_STAGE.items():
            if modality not in self.turn_ms or stage not in self.stages_ms or "text" not in self.turn_ms:
                raise ValueError(f"budgets need turn_ms.text, turn_ms.{modality} and stages_ms.{stage}.")
            want = self.stages_ms[stage] + self.turn_ms["text"]
            if self.turn_ms[modality] != want:
                raise ValueError(
                    f"turn_ms.{modality} is {self.turn_ms[modality]:g}; it must be stages_ms.{stage} + turn_ms.text"
                    f" = {want:g}."
                )
        return self

    @model_validator(mode="after")
    def _escalation_fits(self) -> Budgets:
        """A turn that escalates to the LLM planner gets turn_ms.llm - turn_ms.text more; its planner stage must fit."""
        if ESCALATED not in self.turn_ms:
            return self
        if self.turn_ms[ESCALATED] <= self.turn_ms["text"]:
            raise ValueError(f"turn_ms.{ESCALATED} ({self.turn_ms[ESCALATED]:g}) must be longer than turn_ms.text.")
        if self.stages_ms["planner_llm"] >= self.turn_ms[ESCALATED] - self.stages_ms["commit"]:
            raise ValueError(
                f"stages_ms.planner_llm must leave turn_ms.{ESCALATED} room for the rest of the turn and its commit."
            )
        return self

    def modalities(self) -> list[str]:
        return [m for m in self.turn_ms if m != ESCALATED]

    def escalation_ms(self) -> float:
        """What a turn's budget grows by when it escalates to the LLM planner (0: no escalation configured)."""
        return self.turn_ms[ESCALATED] - self.turn_ms["text"] if ESCALATED in self.turn_ms else 0.0

    def stage_s(self, stage: str) -> float:
        return self.stages_ms[stage] / 1000.0

    def admission_ms(self, modality: str) -> float:
        """How long a `modality` turn may take, queueing included, and still have every stage answer inside its
        budget: turns queue at the models, so the encoder's budget (plus the media stage's, for a media turn)
        bounds it as well as the turn budget. Admission predicts against this."""
        models_ms = self.stages_ms["encoder"] + (
            self.stages_ms[MEDIA_STAGE[modality]] if modality in MEDIA_STAGE else 0.0
        )
        return min(self.turn_ms[modality], models_ms)
