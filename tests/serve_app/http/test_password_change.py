"""POST /api/v1/auth/password over real sockets (uvicorn, the real store on PostgreSQL, fake models): the token
version bumps, so tokens issued before the change answer 401 everywhere a token is read, the OpenAI routes too."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support.fakes import base_settings
from tests.support.store_app import served, store_app


@pytest.fixture(scope="module")
def strict(postgres, tmp_path_factory):
    settings = base_settings()
    settings = settings.model_copy(update={"auth": settings.auth.model_copy(update={"require_token": True})})
    with served(store_app(postgres["dsn"], tmp_path_factory.mktemp("media"), settings)) as url:
        yield url


def test_tokens_from_before_a_password_change_are_refused(strict):
    with httpx.Client(base_url=strict, timeout=30) as client:
        email = f"{uuid.uuid4().hex[:10]}@password.test"
        created = client.post("/api/v1/auth/register", json={"email": email, "password": "first password"})
        old = {"Authorization": f"Bearer {created.json()['access_token']}"}
        assert client.get("/v1/models", headers=old).status_code == 200
        changed = client.post(
            "/api/v1/auth/password",
            headers=old,
            json={"current_password": "first password", "new_password": "second password"},
        )
        assert changed.status_code == 200, changed.text
        new = {"Authorization": f"Bearer {changed.json()['access_token']}"}
        for path in ("/api/v1/auth/me", "/v1/models", "/api/v1/conversation/messages"):
            assert client.get(path, headers=old).status_code == 401, path
            assert client.get(path, headers=new).status_code == 200, path
        short = client.post(
            "/api/v1/auth/password", headers=new, json={"current_password": "second password", "new_password": "short"}
        )
        assert short.status_code == 422
