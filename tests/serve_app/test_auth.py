"""Password hashing, signed expiring tokens, bearer parsing and the signing secret (no database)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from config.serving import AuthConfig
from serve_app.auth import Auth, Unauthorized, bearer_token, signing_secret

CONFIG = AuthConfig(token_ttl_s=60, secret_env="TEST_SECRET")


async def test_password_hash_verifies_only_the_right_password():
    auth = Auth(CONFIG, "s" * 32)
    stored = await auth.hash_password("correct horse")
    assert stored.startswith("$argon2") and "correct horse" not in stored
    assert await auth.verify_password(stored, "correct horse")
    assert not await auth.verify_password(stored, "wrong horse")
    assert not await auth.verify_password("!", "anything")  # the shadow users' unusable hash


async def test_argon2_runs_off_the_event_loop():
    """While a hash is computed, the loop keeps running other work (here: a ticker)."""
    auth, ticks = Auth(CONFIG, "s" * 32), []

    async def ticker():
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.002)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    before = len(ticks)
    await asyncio.gather(*(auth.hash_password("correct horse") for _ in range(3)))
    task.cancel()
    assert len(ticks) - before >= 5, "the event loop was blocked while argon2 ran"


async def test_an_unknown_email_costs_a_verification_too():
    """Login with no account verifies against a dummy hash: as slow as a wrong password, and never true."""
    auth = Auth(CONFIG, "s" * 32)
    stored = await auth.hash_password("correct horse")
    t0 = time.perf_counter()
    assert not await auth.verify_password(stored, "wrong horse")
    wrong = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert not await auth.verify_password(None, "correct horse")
    missing = time.perf_counter() - t0
    assert missing > 0.3 * wrong, (missing, wrong)


def test_tokens_round_trip_expire_and_cannot_be_forged():
    auth, user = Auth(CONFIG, "s" * 32), uuid.uuid4()
    assert auth.verify(auth.issue(user)) == user
    with pytest.raises(Unauthorized, match="expired"):
        auth.verify(auth.issue(user, now=time.time() - 120))
    with pytest.raises(Unauthorized):
        Auth(CONFIG, "t" * 32).verify(auth.issue(user))
    with pytest.raises(Unauthorized):
        auth.verify("garbage")


def test_bearer_header_parsing():
    assert bearer_token(None) is None
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    for bad in ("Basic abc", "Bearer", "Bearer   ", "abc"):
        with pytest.raises(Unauthorized):
            bearer_token(bad)


def test_signing_secret_prefers_env_and_is_generated_once(tmp_path):
    assert signing_secret(CONFIG, tmp_path, "e" * 32) == "e" * 32
    first = signing_secret(CONFIG, tmp_path, None)
    assert len(first) >= 40 and signing_secret(CONFIG, tmp_path, None) == first
    assert (tmp_path / "auth_secret").stat().st_mode & 0o077 == 0


def _secret_in(folder: str) -> str:
    return signing_secret(CONFIG, Path(folder), None)


def test_replicas_starting_together_on_a_fresh_state_dir_share_one_whole_secret(tmp_path):
    from concurrent.futures import ProcessPoolExecutor

    for attempt in range(5):
        folder = tmp_path / f"state{attempt}"
        with ProcessPoolExecutor(max_workers=6) as pool:
            secrets_seen = list(pool.map(_secret_in, [str(folder)] * 12))
        assert len(set(secrets_seen)) == 1 and len(secrets_seen[0]) >= 40
        assert sorted(p.name for p in folder.iterdir()) == ["auth_secret"]  # no draft left behind


def test_an_empty_secret_file_is_a_clear_error(tmp_path):
    (tmp_path / "auth_secret").write_text("", encoding="ascii")
    (tmp_path / "auth_secret").chmod(0o600)
    with pytest.raises(RuntimeError, match="empty"):
        signing_secret(CONFIG, tmp_path, None)


def test_a_short_secret_refuses_to_start_wherever_it_comes_from(tmp_path):
    with pytest.raises(RuntimeError, match="TEST_SECRET has 31 characters; it needs at least 32"):
        signing_secret(CONFIG, tmp_path, "e" * 31)
    (tmp_path / "auth_secret").write_text("hand-written", encoding="ascii")
    (tmp_path / "auth_secret").chmod(0o600)
    with pytest.raises(RuntimeError, match="12 characters; it needs at least 32"):
        signing_secret(CONFIG, tmp_path, None)
    longer = CONFIG.model_copy(update={"min_secret_chars": 80})
    with pytest.raises(RuntimeError, match="at least 80"):
        signing_secret(longer, tmp_path / "fresh", None)  # the generated one (64 characters) is held to the setting too


def test_a_cluster_never_generates_a_secret_of_its_own(tmp_path):
    cluster = CONFIG.model_copy(update={"generate_secret": False})
    with pytest.raises(RuntimeError, match="TEST_SECRET is not set and auth.generate_secret is false"):
        signing_secret(cluster, tmp_path, None)
    assert not (tmp_path / "auth_secret").exists()
    assert signing_secret(cluster, tmp_path, "k" * 40) == "k" * 40
