"""PostgreSQL (section `database`): the pool of each orchestrator replica, leases and the conversation store."""

from __future__ import annotations

from pydantic import Field

from config.base import Section


class DatabaseConfig(Section):
    schema_name: str = Field(
        pattern=r"^[a-z_][a-z0-9_]{0,62}$", description="PostgreSQL schema holding Baton's tables."
    )
    pool_min: int = Field(ge=0, description="Connections each orchestrator replica keeps open.")
    pool_max: int = Field(gt=0, description="Connections each orchestrator replica may open.")
    connection_margin: int = Field(
        ge=0,
        description="Connections of the server kept for everything but the Orchestrators' pools (migrations, "
        "a rolling update's extra replica, operators, monitoring): at start, pool_max x the Orchestrator's "
        "max_replicas must fit max_connections less the reserved connections and this margin.",
    )
    connect_timeout_s: float = Field(gt=0)
    pool_acquire_timeout_s: float = Field(
        gt=0, description="Waiting longer for a free connection sheds the request (503 overloaded)."
    )
    command_timeout_s: float = Field(gt=0, description="A statement running longer fails the request with 503.")
    session_lease_s: float = Field(
        gt=0, description="A turn's hold on its session; a crashed replica's hold lapses after this."
    )
    session_busy_wait_ms: float = Field(
        ge=0, description="How long a second turn on a busy session waits before 409 session_busy."
    )
    session_busy_poll_ms: float = Field(gt=0, description="The first pause before a busy session is checked again.")
    session_busy_poll_max_ms: float = Field(
        gt=0, description="The longest pause between checks (each pause doubles the last); no connection is held."
    )
    write_request_ttl_s: int = Field(gt=0, description="A write request not decided within this expires.")
    clarification_ttl_s: int = Field(gt=0, description="An open clarification question expires after this.")
    recent_messages: int = Field(gt=0, description="Messages in a conversation snapshot.")
    page_limit_max: int = Field(gt=0)
    embedded_start_timeout_s: float = Field(gt=0)
