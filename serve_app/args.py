"""Typed arguments of the Baton application, as given in the Serve config's `args`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from config.settings import Settings, load_settings
from engine.model_client import HEADS

# Deployment names per layout (the Serve config's `deployments` entries match them)
INGRESS = "Orchestrator"
FUSED = {"nlu": "NLU"}
SPLIT = {
    "encoder": "Encoder",
    "classifier": "IntentClassifier",
    "detector": "MultiIntentDetector",
    "retriever": "EmbeddingRetriever",
}
MEDIA = {"asr": "ASR", "ocr": "OCR"}
PLANNER = "Planner"
assert set(SPLIT) == {"encoder", *HEADS}


class AppArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config_dir: str = Field(default="config", description="Folder holding baton.yaml, budgets.yaml and domains/.")
    state_dir: str = Field(default="var", description="Built packs, models, the embedded database and the media store.")
    pack: str | None = Field(default=None, description="Domain pack to serve; None = baton.yaml's pack.")
    layout: Literal["inline", "fused", "split"] = Field(
        default="fused",
        description="inline: the encoder and the three heads run inside each Orchestrator replica (no hop: fastest "
        "where the models share a few CPU cores with the orchestrator, e.g. a laptop); fused: one NLU deployment holds "
        "them (scaled on its own, one hop); split: an Encoder deployment feeding three head deployments, each scaled "
        "on its own (GPU clusters).",
    )
    media: bool = Field(
        default=True, description="Deploy ASR and OCR (false: a text-only app; voice and image turns answer 503)."
    )
    planner: Literal["none", "vllm", "serve_llm"] = Field(
        default="none",
        description="The language model behind the LLM planner and /v1/chat/completions. vllm: the Planner deployment "
        "(vLLM's engine, settings from baton.yaml `llm`; on a CPU machine in its own venv, named by the "
        "deployment's runtime_env py_executable); serve_llm: Ray Serve LLM's LLMServer built from `llm_config` "
        "(GPU clusters); none: no LLM, planning stays local.",
    )
    llm_config: dict[str, Any] = Field(
        default_factory=dict,
        description="planner serve_llm: the ray.serve.llm LLMConfig (model_loading_config, accelerator_type, "
        "engine_kwargs, deployment_config, ...).",
    )
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings merged over baton.yaml / budgets.yaml for this deployment "
        "(e.g. models.device, asr.model_path, auth.require_token): what a cluster changes, kept in its Serve config.",
    )
    deployment_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per deployment name, serve.deployment options; the launcher fills it from the Serve config's "
        "`deployments` (a Serve controller deploying the same YAML applies them itself).",
    )

    def model_kinds(self) -> dict[str, str]:
        """kind → deployment name of the model deployments of this layout."""
        text = {"inline": {}, "fused": FUSED, "split": SPLIT}[self.layout]
        return {**text, **(MEDIA if self.media else {})}

    def deployment_names(self) -> list[str]:
        return [INGRESS, *self.model_kinds().values(), *([PLANNER] if self.planner != "none" else [])]

    def settings(self, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings a replica of this app loads, with this app's pack and state dir: `environ` is the process's
        own when None (read by the config loader); a renderer passes `{}` so the environment plays no part."""
        return load_settings(
            Path(self.config_dir).resolve(), environ, self.overrides, pack=self.pack, state_dir=Path(self.state_dir)
        )
