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
    shared_from: str | None = Field(
        default=None,
        description="The Serve application (another pack's, in this cluster) whose ASR, OCR and Planner deployments "
        "this app calls instead of deploying its own: their models are the same whatever the pack. None: this app "
        "deploys them (serve_app.ops.apps writes it when one cluster serves several packs).",
    )
    assistants: dict[str, str] = Field(
        default_factory=dict,
        description="Every pack this cluster serves, pack → its application's route prefix (the demo page offers "
        "them); empty when this app is the only one.",
    )
    pool_replicas: int | None = Field(
        default=None,
        gt=0,
        description="Orchestrator replicas whose pools share the database, every app of the cluster counted: what "
        "each replica's start-up check sizes PostgreSQL for (None: this app's own max_replicas).",
    )
    deployment_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per deployment name, serve.deployment options; the launcher fills it from the Serve config's "
        "`deployments` (a Serve controller deploying the same YAML applies them itself).",
    )

    def model_kinds(self) -> dict[str, str]:
        """kind → deployment name of the model deployments this app deploys (its layout's, and the media models
        unless another app shares them)."""
        text = {"inline": {}, "fused": FUSED, "split": SPLIT}[self.layout]
        return {**text, **(MEDIA if self.media and self.shared_from is None else {})}

    def shared_kinds(self) -> dict[str, str]:
        """kind → deployment name of the deployments whose model is the same whatever the pack (ASR, OCR, the
        Planner) that this app has: its own, or `shared_from`'s."""
        return {**(MEDIA if self.media else {}), **({"planner": PLANNER} if self.planner != "none" else {})}

    def deployment_names(self) -> list[str]:
        """The deployments this app deploys."""
        planner = [PLANNER] if self.planner != "none" and self.shared_from is None else []
        return [INGRESS, *self.model_kinds().values(), *planner]

    def awaited_deployments(self, app_name: str) -> list[tuple[str, str]]:
        """(application, deployment) of every deployment a turn of this app (deployed as `app_name`) may call:
        its own and those it shares from another app."""
        shared = list(self.shared_kinds().values()) if self.shared_from is not None else []
        return [(app_name, d) for d in self.deployment_names()] + [(self.shared_from or app_name, d) for d in shared]

    def settings(self, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings a replica of this app loads, with this app's pack and state dir: `environ` is the process's
        own when None (read by the config loader); a renderer passes `{}` so the environment plays no part."""
        return load_settings(
            Path(self.config_dir).resolve(), environ, self.overrides, pack=self.pack, state_dir=Path(self.state_dir)
        )
