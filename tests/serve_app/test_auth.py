"""Password hashing, signed expiring tokens, bearer parsing and the signing secret (no database)."""
from __future__ import annotations

import time
import uuid

import pytest

from engine.settings import AuthConfig
from serve_app.auth import Auth, Unauthorized, bearer_token, signing_secret

CONFIG = AuthConfig(token_ttl_s=60, secret_env="TEST_SECRET")


def test_password_hash_verifies_only_the_right_password():
    auth = Auth(CONFIG, "s" * 32)
    stored = auth.hash_password("correct horse")
    assert stored.startswith("$argon2") and "correct horse" not in stored
    assert auth.verify_password(stored, "correct horse")
    assert not auth.verify_password(stored, "wrong horse")
    assert not auth.verify_password("!", "anything")  # the shadow users' unusable hash


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
    assert signing_secret(CONFIG, tmp_path, {"TEST_SECRET": "from-env"}) == "from-env"
    first = signing_secret(CONFIG, tmp_path, {})
    assert len(first) >= 40 and signing_secret(CONFIG, tmp_path, {}) == first
    assert (tmp_path / "auth_secret").stat().st_mode & 0o077 == 0
