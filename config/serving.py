"""The serving layer's sections: admission, the HTTP ingress, metrics and authentication."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from config.base import Section


class AdmissionConfig(Section):
    max_in_flight_turns: int = Field(gt=0, description="Hard cap on turns one orchestrator replica runs at once.")
    headroom: float = Field(
        gt=0, le=1, description="Admit a turn only if its predicted time is within this share of its budget."
    )
    drift: float = Field(
        gt=0, lt=1, description="Per finished turn, how fast the estimate of unloaded time forgets a faster past."
    )
    smoothing: float = Field(
        gt=0,
        le=1,
        description="Weight of each finished turn in the moving averages:"
        " its depth's service time and what one turn ahead adds.",
    )
    stale_s: float = Field(
        gt=0,
        description="A depth's average service time counts this long after its last turn;"
        " older, the depth is predicted from the ones below.",
    )
    min_samples: int = Field(
        ge=1,
        description="A depth's average counts once this many recent turns measured it;"
        " before, the depth is predicted from the ones below.",
    )
    outlier: float = Field(
        gt=1, description="A finished turn moves a moving average as if it took at most this many times that average."
    )


class ServingConfig(Section):
    admission: AdmissionConfig
    retry_after_s: int = Field(gt=0, description="Retry-After sent with a shed turn.")
    metrics_port: int = Field(
        ge=0, description="Prometheus exposition port of the orchestrator replica; 0 disables it."
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="Address the Prometheus listener binds (0.0.0.0 where a scraper reaches the node).",
    )
    http_ingress: Literal["haproxy", "proxy"] = Field(
        description="haproxy: Ray Serve's high-throughput mode (HAProxy in front of replicas serving HTTP themselves); "
        "proxy: Serve's Python HTTP proxy."
    )
    model_calls: Literal["grpc", "actor"] = Field(
        default="grpc",
        description="How the orchestrator calls the text models: grpc, straight to the replica's "
        "inter-deployment gRPC server (by value); actor, as a Ray actor task (by reference).",
    )


class AuthConfig(Section):
    token_ttl_s: int = Field(gt=0, description="Lifetime of an access token.")
    secret_env: str = Field(
        description="Env var holding the token signing secret; unset = one generated under the state dir."
    )
    algorithm: Literal["HS256", "HS384", "HS512"] = Field(
        default="HS256", description="HMAC algorithm tokens are signed with; nothing else is accepted on the way in."
    )
    issuer: str = Field(
        default="baton", min_length=1, description="`iss` of every token; a token without it is refused."
    )
    audience: str = Field(
        default="baton-api", min_length=1, description="`aud` of every token; a token for another audience is refused."
    )
    require_token: bool = Field(
        default=False,
        description="true: the token-less local mode is off; chat, uploads, media reads and the WebSocket need"
        " a bearer token (false: a request without one acts as the local user it names; loopback binds only).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header names the app answers besides its bind address and loopback (e.g. a DNS name it is"
        " reached by); any other Host is refused (421), so a rebound DNS name cannot reach it.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Origins (scheme://host[:port]) besides the app's own that may open the WebSocket or send"
        " state-changing requests from a browser; a request with no Origin (curl, SDKs) is not a browser's.",
    )
    generate_secret: bool = Field(
        default=True,
        description="false: the secret must come from secret_env, so every replica on every node signs with the"
        " same one (a cluster); true: without it one is generated once under the state dir (one machine).",
    )
    min_secret_chars: int = Field(default=32, ge=16, description="A shorter signing secret refuses to start.")
