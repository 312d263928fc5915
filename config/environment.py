"""What a process's environment contributes to its settings, read once when the settings are loaded.

Nothing else in Baton reads the environment (the launcher, which writes it for the processes it starts, aside):
a replica's constructor is given these values inside its `Settings`, and a test gives them as a plain mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, SecretStr

from config.base import Section

PACK_ENV = "BATON_PACK"
STATE_DIR_ENV = "BATON_STATE_DIR"
DATABASE_URL_ENV = "DATABASE_URL"
FAULTS_ENV = "BATON_FAULTS"
FAULTS_FILE_ENV = "BATON_FAULTS_FILE"
METRICS_PORT_ENV = "BATON_METRICS_PORT"
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


class Environment(Section):
    """The values a process takes from its environment; secrets stay `SecretStr` (never printed, never dumped)."""

    database_url: SecretStr | None = Field(
        default=None, description=f"{DATABASE_URL_ENV}: the PostgreSQL the orchestrator uses."
    )
    auth_secret: SecretStr | None = Field(
        default=None, description="The token signing secret, from the variable `auth.secret_env` names."
    )
    faults: str = Field(
        default="", description=f"{FAULTS_ENV}: faults injected from the start (`stage:delay_ms=800`, ...)."
    )
    faults_file: Path | None = Field(
        default=None, description=f"{FAULTS_FILE_ENV}: the file a run's faults are flipped in."
    )
    metrics_dir: Path | None = Field(
        default=None, description=f"{METRICS_DIR_ENV}: where the replicas' metrics files are summed."
    )
    calendar_key: SecretStr | None = Field(
        default=None, description="The key CalDAV passwords are encrypted with, from `calendar.key_env`'s variable."
    )
    llm_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Each LLM backend's key, by backend name, from the variable its `api_key_env` names.",
    )

    @classmethod
    def read(
        cls,
        env: Mapping[str, str],
        *,
        secret_env: str,
        calendar_key_env: str = "",
        llm_key_envs: Mapping[str, str] | None = None,
    ) -> Environment:
        """`llm_key_envs`: backend name -> the variable holding its key (`llm.backends.<name>.api_key_env`); a variable
        that is unset or empty gives no key (the backend then answers 401 and its callers fall back)."""
        return cls(
            database_url=env.get(DATABASE_URL_ENV) or None,
            auth_secret=env.get(secret_env) or None,
            faults=env.get(FAULTS_ENV, ""),
            faults_file=Path(env[FAULTS_FILE_ENV]) if env.get(FAULTS_FILE_ENV) else None,
            metrics_dir=Path(env[METRICS_DIR_ENV]) if env.get(METRICS_DIR_ENV) else None,
            calendar_key=(env.get(calendar_key_env) or None) if calendar_key_env else None,
            llm_keys={name: SecretStr(env[var]) for name, var in (llm_key_envs or {}).items() if env.get(var)},
        )
