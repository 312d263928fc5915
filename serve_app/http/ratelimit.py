"""Rate limits, per Orchestrator replica and in its memory: token buckets per client IP and per account, the login
back-off, a small pool for password hashing (argon2 takes ~64 MiB per check) and the concurrency cap of the
OpenAI-compatible routes. A refusal is `RateLimited` (429 with Retry-After over HTTP, a `rate_limited` error event
with `retry_after_s` on the WebSocket). Numbers come from the `rate_limits` section (config/rate_limits.py)."""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from starlette.types import Scope

from config.rate_limits import Bucket, LoginBackoff, RateLimitsConfig
from engine.errors import BatonError

Clock = Callable[[], float]


class RateLimited(BatonError):
    """Too many requests from one client, for one account or at once; retry after `retry_after_s`."""

    code = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: float, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.retry_after_s = max(1, math.ceil(retry_after_s))


@dataclass
class _Level:
    tokens: float
    at: float


class TokenBuckets:
    """One bucket per key, the `max_keys` most recently used remembered (a forgotten key starts full again)."""

    def __init__(self, bucket: Bucket, max_keys: int, clock: Clock = time.monotonic) -> None:
        self._bucket, self._max_keys, self._clock = bucket, max_keys, clock
        self._levels: OrderedDict[str, _Level] = OrderedDict()

    def take(self, key: str) -> float:
        """Spend one token of `key`'s bucket: 0.0 when there was one, else the seconds until there is (nothing
        spent)."""
        now, bucket = self._clock(), self._bucket
        level = self._levels.pop(key, None) or _Level(float(bucket.burst), now)
        level.tokens = min(float(bucket.burst), level.tokens + (now - level.at) * bucket.per_s)
        level.at = now
        self._levels[key] = level
        if len(self._levels) > self._max_keys:
            self._levels.popitem(last=False)
        if level.tokens >= 1.0:
            level.tokens -= 1.0
            return 0.0
        return (1.0 - level.tokens) / bucket.per_s


@dataclass
class _Failures:
    count: int
    last: float


class LoginBackoffs:
    """Failed logins per account: after `free_failures`, each further attempt waits `base_s`, doubled per failure up
    to `max_s`, counted from the last failure; a success, or `forget_s` without a failure, starts again."""

    def __init__(self, config: LoginBackoff, max_keys: int, clock: Clock = time.monotonic) -> None:
        self._config, self._max_keys, self._clock = config, max_keys, clock
        self._failures: OrderedDict[str, _Failures] = OrderedDict()

    def wait_s(self, account: str) -> float:
        failures = self._failures.get(account)
        if failures is None:
            return 0.0
        elapsed = self._clock() - failures.last
        if elapsed > self._config.forget_s:
            del self._failures[account]
            return 0.0
        over = failures.count - self._config.free_failures
        if over < 0:
            return 0.0
        return max(0.0, min(self._config.max_s, self._config.base_s * 2.0**over) - elapsed)

    def failed(self, account: str) -> None:
        failures = self._failures.pop(account, None)
        count = 0 if failures is None or self._clock() - failures.last > self._config.forget_s else failures.count
        self._failures[account] = _Failures(count + 1, self._clock())
        if len(self._failures) > self._max_keys:
            self._failures.popitem(last=False)

    def succeeded(self, account: str) -> None:
        self._failures.pop(account, None)


class Slots:
    """At most `size` holders at once and `queue` waiting; a caller beyond both is refused at once."""

    def __init__(self, size: int, queue: int, what: str) -> None:
        self._semaphore = asyncio.Semaphore(size)
        self._size, self._queue, self._what = size, queue, what
        self._inside = 0

    @property
    def inside(self) -> int:
        return self._inside

    def _enter(self) -> None:
        if self._inside >= self._size + self._queue:
            raise RateLimited(f"Too many {self._what} at once; retry shortly.", retry_after_s=1)
        self._inside += 1

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot, waiting in the queue for one; RateLimited at once when the queue is full too."""
        self._enter()
        try:
            async with self._semaphore:
                yield
        finally:
            self._inside -= 1

    def take_now(self) -> Callable[[], None]:
        """Take a free slot without waiting (RateLimited when none is free, whatever the queue); returns its release,
        which may be called more than once."""
        if self._inside >= self._size:
            raise RateLimited(f"Too many {self._what} at once; retry shortly.", retry_after_s=1)
        self._inside += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._inside -= 1

        return release


def client_ip(scope: Scope, trusted_proxies: list[str] | tuple[str, ...] = ()) -> str:
    """The client's address: the ASGI peer, or, when that peer is a trusted proxy, the last address of
    X-Forwarded-For that is not one. Behind Ray Serve's HAProxy ingress the peer is HAProxy (Ray 2.60's template sets
    no X-Forwarded-For), so every client of a node shares that address unless a proxy in front is trusted here."""
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    if peer not in trusted_proxies:
        return peer
    forwarded = [
        value.decode("latin-1") for name, value in scope.get("headers", ()) if name.lower() == b"x-forwarded-for"
    ]
    hops: list[str] = [hop.strip() for line in forwarded for hop in line.split(",") if hop.strip()]
    for hop in reversed(hops):
        if hop not in trusted_proxies:
            return hop
    return peer


class RateLimits:
    """This replica's limits, built once from the config (`enabled: false`: every check passes)."""

    def __init__(
        self,
        config: RateLimitsConfig,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.config = config
        keys = config.max_keys

        def buckets(bucket: Bucket) -> TokenBuckets:
            return TokenBuckets(bucket, keys, clock)

        self._login_ip, self._login_account = buckets(config.login_per_ip), buckets(config.login_per_account)
        self._register_ip, self._upload_ip = buckets(config.register_per_ip), buckets(config.upload_per_ip)
        self._openai_ip, self._resume = buckets(config.openai_per_ip), buckets(config.resume_per_user)
        self._clock, self._sleep = clock, sleep
        self.backoff = LoginBackoffs(config.login_backoff, keys, clock)
        self.passwords = Slots(config.password_checks, config.password_queue, "password checks")
        self.openai = Slots(config.openai_max_in_flight, 0, "chat completions from external clients")
        self._held = 0

    async def slowly(self, refusal: RateLimited) -> RateLimited:
        """`refusal`, after holding it up to `slow_refusals_s` (or its Retry-After, if shorter), unless
        `slow_refusals_max` are held already. A guesser that waits for each answer (a closed loop) is slowed to one
        attempt per that long per connection, where answering at once would let it cost the replica hundreds of
        requests a second; a waiting coroutine costs next to nothing."""
        hold = min(float(refusal.retry_after_s), self.config.slow_refusals_s)
        if hold <= 0 or self._held >= self.config.slow_refusals_max:
            return refusal
        self._held += 1
        try:
            await self._sleep(hold)
        finally:
            self._held -= 1
        return refusal

    def ip_of(self, scope: Scope) -> str:
        return client_ip(scope, self.config.trusted_proxies)

    def _spend(self, buckets: TokenBuckets, key: str, what: str, field: str | None = None) -> None:
        if not self.config.enabled:
            return
        wait = buckets.take(key)
        if wait > 0:
            raise RateLimited(f"Too many {what}; retry in {math.ceil(wait)} s.", retry_after_s=wait, field=field)

    def login(self, ip: str, account: str) -> None:
        """Before a password is checked: the account's back-off, then the IP's and the account's buckets."""
        if not self.config.enabled:
            return
        wait = self.backoff.wait_s(account)
        if wait > 0:
            raise RateLimited(
                f"Too many failed logins for this account; retry in {math.ceil(wait)} s.",
                retry_after_s=wait,
                field="email",
            )
        self._spend(self._login_ip, ip, "logins from this address")
        self._spend(self._login_account, account, "logins for this account", "email")

    def register(self, ip: str) -> None:
        self._spend(self._register_ip, ip, "registrations from this address")

    def upload(self, ip: str) -> None:
        self._spend(self._upload_ip, ip, "uploads from this address")

    def openai_request(self, ip: str) -> None:
        self._spend(self._openai_ip, ip, "requests from this address")

    def resume(self, user: str) -> None:
        self._spend(self._resume, user, "transport.resume frames")

    def frames(self) -> Callable[[], RateLimited | None]:
        """A WebSocket connection's frame limit: call it per frame received; a RateLimited to answer with (the frame is
        then dropped, the connection stays), or None."""
        if not self.config.enabled:
            return lambda: None
        bucket = TokenBuckets(self.config.ws_frames_per_connection, 1, self._clock)

        def check() -> RateLimited | None:
            wait = bucket.take("frames")
            return RateLimited("Too many frames on this connection.", retry_after_s=wait) if wait > 0 else None

        return check
