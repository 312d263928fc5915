"""The settings object: config/baton.yaml and config/budgets.yaml, a deployment's overrides and the environment,
validated once at start-up and passed to whatever needs them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, model_validator

from config.base import Section
from config.budgets import Budgets
from config.calendar import CalendarConfig
from config.database import DatabaseConfig
from config.engine import (
    ClauseConfig,
    ConversationConfig,
    DetectorConfig,
    FusionConfig,
    PartialConfig,
    PlannerConfig,
    SessionConfig,
    SlotConfig,
    TestingConfig,
)
from config.environment import METRICS_PORT_ENV, PACK_ENV, STATE_DIR_ENV, Environment
from config.limits import LimitsConfig
from config.llm import CompactionConfig, HooksConfig, LlmConfig, PromptsConfig
from config.media import AsrConfig, MediaConfig, OcrConfig
from config.models import ModelsConfig
from config.rate_limits import RateLimitsConfig
from config.serving import AuthConfig, ServingConfig

CONFIG_DIR = Path(__file__).resolve().parent  # the defaults shipped with Baton (this package's own folder)


class Settings(Section):
    pack: str
    timezone: str
    max_text_chars: int = Field(gt=0)
    top_k: int = Field(gt=0)
    fusion: FusionConfig
    detector: DetectorConfig
    clauses: ClauseConfig
    planner: PlannerConfig
    partial: PartialConfig = Field(default_factory=PartialConfig)
    slots: SlotConfig
    session: SessionConfig
    models: ModelsConfig
    serving: ServingConfig
    database: DatabaseConfig
    auth: AuthConfig
    rate_limits: RateLimitsConfig
    conversation: ConversationConfig
    limits: LimitsConfig
    prompts: PromptsConfig
    hooks: HooksConfig
    compaction: CompactionConfig
    llm: LlmConfig = LlmConfig()
    budgets: Budgets
    testing: TestingConfig = TestingConfig()
    media: MediaConfig
    calendar: CalendarConfig = CalendarConfig()
    asr: AsrConfig
    ocr: OcrConfig
    state_dir: Path = Path("var")
    config_dir: Path = CONFIG_DIR
    env: Environment = Field(default_factory=Environment, description="What the environment said (never in the YAML).")

    @model_validator(mode="after")
    def _lease_outlasts_turns(self) -> Settings:
        """A lease shorter than a turn could lapse mid-turn and let a second turn run the same session."""
        longest = max(self.budgets.turn_ms[m] for m in self.budgets.modalities()) + self.budgets.escalation_ms()
        if self.database.session_lease_s * 1000.0 <= longest:
            raise ValueError(
                f"database.session_lease_s is {self.database.session_lease_s:g} s; it must be longer than the longest "
                f"turn budget ({longest / 1000:g} s, budgets.turn_ms, an escalation included)."
            )
        return self

    @model_validator(mode="after")
    def _tests_only_in_tests(self) -> Settings:
        if self.testing.now is not None and self.auth.require_token:
            raise ValueError(
                "testing.now pins the app's clock for tests; a deployment with auth.require_token refuses it."
            )
        if self.testing.now is not None and self.testing.now.tzinfo is None:
            raise ValueError("testing.now needs a zone offset (e.g. 2026-12-06T23:30:00+08:00).")
        return self

    @property
    def packs_dir(self) -> Path:
        return self.config_dir / "domains"

    @property
    def encoder_path(self) -> Path:
        return (
            Path(self.models.encoder) if self.models.encoder else self.state_dir / "encoder" / "multilingual-e5-small"
        )

    @property
    def media_dir(self) -> Path:
        return (
            Path(self.media.object_store.local_dir) if self.media.object_store.local_dir else self.state_dir / "media"
        )

    @property
    def whisper_path(self) -> Path:
        return Path(self.asr.model_path) if self.asr.model_path else self.state_dir / "whisper" / "base"

    @property
    def llm_path(self) -> Path:
        return Path(self.llm.model_path) if self.llm.model_path else self.state_dir / "llm" / "gemma-3-270m"

    def artifacts_dir(self, pack: str | None = None) -> Path:
        return self.state_dir / "packs" / (pack or self.pack) / "models"


def load_settings(
    config_dir: Path = CONFIG_DIR,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    pack: str | None = None,
    state_dir: Path | None = None,
) -> Settings:
    """Read both YAML files under `config_dir`; `overrides` (a Serve config's `args.overrides`: one deployment's
    devices, model paths, auth posture) are merged over them key by key, `budgets` included; then the environment:
    `env`, or this process's own when None — the one place Baton reads it (`BATON_PACK`, `BATON_STATE_DIR`,
    `BATON_METRICS_PORT` override the YAML; `DATABASE_URL`, the signing secret, faults and the metrics folder land in
    `Settings.env`); `pack` and `state_dir`, when given (a Serve config's `args`), win over both."""
    env = os.environ if env is None else env
    raw = yaml.safe_load((config_dir / "baton.yaml").read_text(encoding="utf-8"))
    raw["budgets"] = yaml.safe_load((config_dir / "budgets.yaml").read_text(encoding="utf-8"))
    raw = merged(raw, overrides or {})
    raw["config_dir"] = config_dir
    if pack or env.get(PACK_ENV):
        raw["pack"] = pack or env[PACK_ENV]
    raw["state_dir"] = state_dir or Path(env.get(STATE_DIR_ENV) or raw.get("state_dir") or "var")
    if env.get(METRICS_PORT_ENV):
        raw["serving"]["metrics_port"] = int(env[METRICS_PORT_ENV])
    raw["env"] = Environment.read(
        env,
        secret_env=raw.get("auth", {}).get("secret_env", ""),
        calendar_key_env=raw.get("calendar", {}).get("key_env", CalendarConfig().key_env),
        llm_key_envs=_llm_key_envs(raw),
    )
    return Settings(**raw)


def _llm_key_envs(raw: Mapping[str, Any]) -> dict[str, str]:
    """The variables the LLM backends' keys are in, by backend name (validated with the rest, just after)."""
    backends = (raw.get("llm") or {}).get("backends") or {}
    if not isinstance(backends, Mapping):
        return {}
    return {
        str(name): str(b["api_key_env"])
        for name, b in backends.items()
        if isinstance(b, Mapping) and isinstance(b.get("api_key_env"), str) and b["api_key_env"]
    }


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` laid on top: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value
        )
    return out
