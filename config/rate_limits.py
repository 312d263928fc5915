"""Rate limits (section `rate_limits`): token buckets per client IP and per account, the login back-off, the
password-check pool and the OpenAI-compatible routes' concurrency cap. Every number is per Orchestrator replica:
the state lives in each replica's memory (serve_app/http/ratelimit.py), so a deployment of N replicas admits up to
N times each figure in all."""

from __future__ import annotations

from pydantic import Field

from config.base import Section


class Bucket(Section):
    """A token bucket: `burst` requests at once, then `per_s` a second."""

    per_s: float = Field(gt=0, description="Tokens added per second (the sustained rate).")
    burst: int = Field(ge=1, description="The bucket's size: requests allowed back to back.")


class LoginBackoff(Section):
    free_failures: int = Field(ge=1, description="Failed logins of one account before it must wait.")
    base_s: float = Field(gt=0, description="The first wait; each further failure doubles it.")
    max_s: float = Field(gt=0, description="The longest wait.")
    forget_s: float = Field(gt=0, description="An account with no failure for this long starts again from zero.")


class RateLimitsConfig(Section):
    enabled: bool = Field(default=True, description="false: no limit at all (benchmarks that flood on purpose).")
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Peers whose X-Forwarded-For names the client (its last address not in this list). Empty: the "
        "ASGI peer is the client; behind Ray Serve's HAProxy ingress that peer is HAProxy itself (docs/security.md).",
    )
    max_keys: int = Field(ge=16, description="Buckets remembered per limit; the least recently used are forgotten.")
    login_per_ip: Bucket
    login_per_account: Bucket
    register_per_ip: Bucket
    upload_per_ip: Bucket
    openai_per_ip: Bucket
    ws_frames_per_connection: Bucket
    resume_per_user: Bucket
    login_backoff: LoginBackoff
    password_checks: int = Field(ge=1, description="argon2 hashes or checks running at once (each takes ~64 MiB).")
    password_queue: int = Field(ge=0, description="Password checks waiting for a slot; more are refused with 429.")
    slow_refusals_s: float = Field(
        ge=0,
        description="A refused login or registration is answered after this long at most (its Retry-After, if "
        "shorter): a client that waits for each answer, as password guessers do, then sends one request per this "
        "long per connection instead of hundreds a second. 0: answer at once.",
    )
    slow_refusals_max: int = Field(
        ge=0, description="Refusals held back at once; more are answered at once (a held one costs a coroutine)."
    )
    openai_max_in_flight: int = Field(
        ge=1, description="Chat completions from external clients running at once; more are refused with 429."
    )
