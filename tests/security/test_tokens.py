"""Issue 34, item 13: tokens are HMAC-signed for Baton's issuer and audience only, a password change revokes every
token issued before it (the account's token version), and a signing secret file someone else can read or owns is
refused before it is trusted. The revocation is checked on the served app."""

from __future__ import annotations

import os
import time
import uuid

import httpx
import jwt
import pytest
from pydantic import ValidationError

from config.serving import AuthConfig
from serve_app.auth import Auth, Unauthorized, signing_secret

CONFIG = AuthConfig(token_ttl_s=60, secret_env="TEST_SECRET")
SECRET = "s" * 40


@pytest.mark.parametrize("algorithm", ["none", "RS256", "ES256", "hs256", "HS1"])
def test_the_algorithm_is_one_of_the_hmac_family(algorithm):
    with pytest.raises(ValidationError, match="algorithm"):
        AuthConfig(token_ttl_s=60, secret_env="X", algorithm=algorithm)
    assert AuthConfig(token_ttl_s=60, secret_env="X", algorithm="HS512").algorithm == "HS512"


def _forged(**claims) -> str:
    now = int(time.time())
    return jwt.encode({"sub": str(uuid.uuid4()), "iat": now, "exp": now + 60, "ver": 0, **claims}, SECRET, "HS256")


@pytest.mark.parametrize(
    "claims",
    [
        {},  # no issuer, no audience: a token another service signed with a shared secret
        {"iss": "baton"},
        {"aud": "baton-api"},
        {"iss": "someone-else", "aud": "baton-api"},
        {"iss": "baton", "aud": "another-api"},
    ],
)
def test_a_token_for_another_issuer_or_audience_is_refused(claims):
    auth = Auth(CONFIG, SECRET)
    with pytest.raises(Unauthorized, match="not valid"):
        auth.verify(_forged(**claims))
    assert auth.verify(_forged(iss="baton", aud="baton-api")) is not None  # the same token with Baton's claims


def test_tokens_carry_issuer_audience_and_the_token_version():
    auth, user = Auth(CONFIG, SECRET), uuid.uuid4()
    claims = jwt.decode(auth.issue(user, version=3), SECRET, algorithms=["HS256"], audience="baton-api")
    assert (claims["iss"], claims["aud"], claims["ver"], claims["sub"]) == ("baton", "baton-api", 3, str(user))
    assert auth.claims(auth.issue(user, version=3)) == (user, 3)
    unsigned = jwt.encode({"sub": str(user), "iss": "baton", "aud": "baton-api", "exp": 2**31, "ver": 0}, None, "none")
    with pytest.raises(Unauthorized):
        auth.verify(unsigned)


def test_a_secret_file_others_may_read_is_refused(tmp_path):
    path = tmp_path / "auth_secret"
    path.write_text("k" * 48, encoding="ascii")
    for mode in (0o644, 0o640, 0o604, 0o620):
        path.chmod(mode)
        with pytest.raises(RuntimeError, match=f"mode {mode:04o}: other accounts may read the signing secret"):
            signing_secret(CONFIG, tmp_path, None)
    path.chmod(0o600)
    assert signing_secret(CONFIG, tmp_path, None) == "k" * 48


def test_a_secret_file_another_account_owns_is_refused(tmp_path):
    path = tmp_path / "auth_secret"
    path.write_text("k" * 48, encoding="ascii")
    path.chmod(0o600)
    other = 65534 if os.geteuid() == 0 else os.geteuid() + 1
    if os.geteuid() == 0:
        os.chown(path, other, -1)
        with pytest.raises(RuntimeError, match=f"belongs to uid {other}"):
            signing_secret(CONFIG, tmp_path, None)
    else:  # an unprivileged run cannot give a file away; the check reads the owner all the same
        assert path.stat().st_uid != other and signing_secret(CONFIG, tmp_path, None) == "k" * 48


def test_a_password_change_revokes_every_earlier_token(serve_app):
    with httpx.Client(base_url=serve_app["url"], timeout=30) as client:
        email = f"{uuid.uuid4().hex[:10]}@tokens.test"
        created = client.post("/api/v1/auth/register", json={"email": email, "password": "first password"})
        assert created.status_code == 201, created.text
        old = {"Authorization": f"Bearer {created.json()['access_token']}"}
        second = client.post("/api/v1/auth/login", json={"email": email, "password": "first password"})
        stolen = {"Authorization": f"Bearer {second.json()['access_token']}"}
        assert client.get("/api/v1/auth/me", headers=stolen).status_code == 200

        wrong = client.post(
            "/api/v1/auth/password",
            headers=old,
            json={"current_password": "not it", "new_password": "second password"},
        )
        assert wrong.status_code == 401 and wrong.json()["error"]["field"] == "current_password"
        assert client.get("/api/v1/auth/me", headers=old).status_code == 200  # a refused change revokes nothing

        changed = client.post(
            "/api/v1/auth/password",
            headers=old,
            json={"current_password": "first password", "new_password": "second password"},
        )
        assert changed.status_code == 200, changed.text
        for revoked in (old, stolen):
            answer = client.get("/api/v1/auth/me", headers=revoked)
            assert answer.status_code == 401 and "revoked" in answer.json()["error"]["message"]
        fresh = {"Authorization": f"Bearer {changed.json()['access_token']}"}
        assert client.get("/api/v1/auth/me", headers=fresh).status_code == 200
        refused = client.post("/api/v1/auth/login", json={"email": email, "password": "first password"})
        assert refused.status_code == 401
        again = client.post("/api/v1/auth/login", json={"email": email, "password": "second password"})
        assert again.status_code == 200
        assert (
            client.get(
                "/api/v1/auth/me", headers={"Authorization": f"Bearer {again.json()['access_token']}"}
            ).status_code
            == 200
        )
