"""The rate limits' parts with a hand-moved clock: buckets, the login back-off, the slot pools, the client address."""

from __future__ import annotations

import asyncio

import pytest

from config.rate_limits import Bucket, LoginBackoff
from config.settings import load_settings
from serve_app.http.ratelimit import LoginBackoffs, RateLimited, RateLimits, Slots, TokenBuckets, client_ip


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_its_burst_then_says_how_long_to_wait_and_refills():
    clock = Clock()
    buckets = TokenBuckets(Bucket(per_s=0.5, burst=3), max_keys=16, clock=clock)
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a") == pytest.approx(2.0)
    assert buckets.take("b") == 0.0  # another key has its own bucket
    clock.now += 2.0
    assert buckets.take("a") == 0.0 and buckets.take("a") > 0


def test_login_backoff_starts_after_the_free_failures_doubles_and_a_success_clears_it():
    clock = Clock()
    backoff = LoginBackoffs(LoginBackoff(free_failures=2, base_s=1, max_s=4, forget_s=60), max_keys=16, clock=clock)
    backoff.failed("a@x.cn")
    assert backoff.wait_s("a@x.cn") == 0.0
    backoff.failed("a@x.cn")
    assert backoff.wait_s("a@x.cn") == pytest.approx(1.0)
    backoff.failed("a@x.cn")
    assert backoff.wait_s("a@x.cn") == pytest.approx(2.0)
    for _ in range(5):
        backoff.failed("a@x.cn")
    assert backoff.wait_s("a@x.cn") == pytest.approx(4.0)  # capped at max_s
    backoff.succeeded("a@x.cn")
    assert backoff.wait_s("a@x.cn") == 0.0


def test_the_login_limit_refuses_with_a_retry_after_and_an_account_in_backoff_before_any_token():
    settings = load_settings()
    limits = RateLimits(settings.rate_limits, clock=Clock())
    account = settings.rate_limits.login_per_account
    for _ in range(account.burst):
        limits.login("10.0.0.1", "v@x.cn")
    with pytest.raises(RateLimited) as err:
        limits.login("10.0.0.2", "v@x.cn")  # another address, the same account
    assert err.value.code == "rate_limited" and err.value.retry_after_s >= 1 and err.value.field == "email"
    for _ in range(settings.rate_limits.login_backoff.free_failures):
        limits.backoff.failed("w@x.cn")
    with pytest.raises(RateLimited, match="failed logins"):
        limits.login("10.0.0.3", "w@x.cn")


def test_disabled_limits_pass_everything():
    settings = load_settings(overrides={"rate_limits": {"enabled": False}})
    limits = RateLimits(settings.rate_limits, clock=Clock())
    for _ in range(1000):
        limits.login("10.0.0.1", "v@x.cn")
        limits.register("10.0.0.1")
    assert limits.frames()() is None


async def test_slots_hold_their_size_queue_the_next_and_refuse_beyond():
    slots = Slots(size=1, queue=1, what="checks")
    entered = asyncio.Event()
    leave = asyncio.Event()

    async def hold():
        async with slots.slot():
            entered.set()
            await leave.wait()

    holder = asyncio.ensure_future(hold())
    await entered.wait()
    waiter = asyncio.ensure_future(hold())
    await asyncio.sleep(0)
    assert slots.inside == 2
    with pytest.raises(RateLimited):
        async with slots.slot():
            pass
    with pytest.raises(RateLimited):
        slots.take_now()
    leave.set()
    await asyncio.gather(holder, waiter)
    release = slots.take_now()
    release()
    release()  # twice is once
    assert slots.inside == 0


def test_the_client_address_is_the_peer_unless_the_peer_is_a_trusted_proxy():
    scope = {"client": ("127.0.0.1", 5000), "headers": [(b"x-forwarded-for", b"6.6.6.6, 203.0.113.9")]}
    assert client_ip(scope) == "127.0.0.1"  # a header anyone can send is not believed by default
    assert client_ip(scope, ["127.0.0.1"]) == "203.0.113.9"
    assert client_ip(scope, ["127.0.0.1", "203.0.113.9"]) == "6.6.6.6"
    assert client_ip({"headers": []}) == "unknown"


async def test_a_refusal_is_held_up_to_its_retry_after_or_the_cap_and_not_beyond_the_held_maximum():
    held: list[float] = []

    async def sleep(seconds: float) -> None:
        held.append(seconds)

    # injected, not patched into asyncio: any other event loop of this process (a server thread) sleeps too
    settings = load_settings(overrides={"rate_limits": {"slow_refusals_s": 1.5}})
    limits = RateLimits(settings.rate_limits, clock=Clock(), sleep=sleep)
    refusal = RateLimited("no", retry_after_s=1)
    assert await limits.slowly(refusal) is refusal
    assert await limits.slowly(RateLimited("no", retry_after_s=30)) is not None
    assert held == [1.0, 1.5]
    none_held = RateLimits(load_settings(overrides={"rate_limits": {"slow_refusals_max": 0}}).rate_limits, sleep=sleep)
    await none_held.slowly(refusal)
    assert held == [1.0, 1.5]
