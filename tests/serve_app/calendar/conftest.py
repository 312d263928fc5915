"""The calendar routes over real sockets: the app with the real store on PostgreSQL and fake models (uvicorn in a
thread, no Ray), its feed fetches allowed to reach 127.0.0.1, and a Radicale beside it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx
import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr

from tests.support.fakes import base_settings
from tests.support.radicale import radicale  # noqa: F401 — the fixture
from tests.support.store_app import served, store_app

MEETING = {
    "item_type": "schedule",
    "title": "组会",
    "start_at": "2026-12-10T15:00:00+08:00",
    "end_at": "2026-12-10T16:30:00+08:00",
}
REPORT = {"item_type": "todo", "title": "交实验报告", "due_at": "2026-12-12T18:00:00+08:00"}


@pytest.fixture(scope="module")
def app_url(postgres, tmp_path_factory):
    settings = base_settings()
    cal = settings.calendar
    cal = cal.model_copy(
        update={
            "max_upload_bytes": 256 * 1024,
            "fetch": cal.fetch.model_copy(update={"allowed_hosts": ["127.0.0.1"], "allow_private": True}),
            "caldav": cal.caldav.model_copy(update={"allow_private": True, "timeout_s": 10}),
        }
    )
    env = settings.env.model_copy(update={"calendar_key": SecretStr(Fernet.generate_key().decode())})
    testing = settings.testing.model_copy(update={"now": datetime(2026, 12, 1, 12, 0, tzinfo=UTC)})  # the horizon's
    settings = settings.model_copy(update={"calendar": cal, "env": env, "testing": testing})
    with served(store_app(postgres["dsn"], tmp_path_factory.mktemp("media"), settings)) as url:
        yield url


@pytest.fixture
def client(app_url):
    with httpx.Client(base_url=app_url, timeout=30) as c:
        yield c


def signed_in(client: httpx.Client) -> dict[str, str]:
    """A new account's bearer header."""
    email = f"{uuid.uuid4().hex[:12]}@calendar.test"
    created = client.post("/api/v1/auth/register", json={"email": email, "password": "calendar password"})
    assert created.status_code == 201, created.text
    return {"Authorization": f"Bearer {created.json()['access_token']}"}


def confirm(client: httpx.Client, headers: dict[str, str], write_request_id: str) -> dict:
    decided = client.post(
        f"/api/v1/write-requests/{write_request_id}/decide",
        headers=headers,
        json={"decision": "confirmed", "idempotency_key": uuid.uuid4().hex},
    )
    assert decided.status_code == 200, decided.text
    return decided.json()


def write_item(client: httpx.Client, headers: dict[str, str], action: str, payload: dict, target_id=None) -> str:
    body = {"action": action, "target_type": "task_item", "payload": payload, "preview_text": "日程"}
    if target_id:
        body["target_id"] = target_id
    created = client.post("/api/v1/write-requests", headers=headers, json=body)
    assert created.status_code == 201, created.text
    return confirm(client, headers, created.json()["write_request_id"])["applied_target_id"]
