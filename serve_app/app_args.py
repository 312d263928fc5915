"""Typed arguments of the Baton application, as given in the Serve config's `args`."""
from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.settings import Settings, load_settings


class AppArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config_dir: str = Field(default="config", description="Folder holding baton.yaml, budgets.yaml and domains/.")
    state_dir: str = Field(default="var", description="Built packs, models and (later) database and media.")
    pack: str | None = Field(default=None, description="Domain pack to serve; None = baton.yaml's pack.")

    def settings(self) -> Settings:
        # the replica's own environment (runtime_env env_vars) carries BATON_METRICS_PORT
        env = {**{k: v for k, v in os.environ.items() if k == "BATON_METRICS_PORT"},
               "BATON_STATE_DIR": self.state_dir, **({"BATON_PACK": self.pack} if self.pack else {})}
        return load_settings(Path(self.config_dir).resolve(), env)
