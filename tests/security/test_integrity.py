"""Issue 34 items 12 and 14 against the real app (Serve, two Orchestrator replicas, PostgreSQL): accounts and
shadow users, one turn per client_message_id, write-request idempotency, sessions and media that are each user's own.
"""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import httpx
import pytest

from benchmarks.media_samples import blank_png
from config.settings import load_settings
from tests.support.packs import CONFIG_DIR

PASSWORD = "correct horse battery"


def _signed_up(client: httpx.Client) -> tuple[dict[str, str], str]:
    email = f"{uuid.uuid4().hex[:12]}@example.com"
    body = client.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD}).json()
    return {"Authorization": f"Bearer {body['access_token']}"}, body["user_id"]


def _code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


def _shadow_rows(dsn: str, local_user_id: str) -> int:
    async def count() -> int:
        conn = await asyncpg.connect(dsn)
        try:
            schema = load_settings(CONFIG_DIR, {}).database.schema_name
            return await conn.fetchval(
                f'SELECT count(*) FROM "{schema}".users WHERE business_user_id = $1', f"local:{local_user_id}"
            )
        finally:
            await conn.close()

    return asyncio.run(count())


@pytest.fixture
def client(serve_app):
    with httpx.Client(base_url=serve_app["url"], timeout=30) as c:
        yield c


def test_one_client_message_id_on_several_sessions_runs_one_turn_and_every_request_gets_its_reply(client):
    """Concurrent duplicates on different session_ids: one turn saved (two messages), and every request answered the
    saved reply — never a 500, never the losing commit's own conflict (the window plugin changes the user's car, so
    before, the losers answered 409 world_busy or 500 on the turn log's key). A turn the admission sheds under this
    machine's load (503 overloaded, nothing ran) is the only other answer."""
    (headers, user_id), cmid = _signed_up(client), uuid.uuid4().hex

    def send(n: int) -> httpx.Response:
        body = {"user_id": user_id, "text": "打开车窗", "client_message_id": cmid, "session_id": f"dup-{n}-{cmid[:8]}"}
        return client.post("/api/v1/agent/chat", json=body, headers=headers)

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(send, range(6)))
    shed = [r for r in answers if r.status_code == 503 and _code(r) == "overloaded"]
    replies = [r.json() for r in answers if r.status_code == 200]
    assert len(replies) + len(shed) == len(answers), [r.text for r in answers]
    assert len(replies) >= 2 and len({(r["session_id"], r["reply"]) for r in replies}) == 1, replies
    log = client.get("/api/v1/conversation/messages", params={"limit": 50}, headers=headers).json()["messages"]
    assert len(log) == 2, log  # one turn: the user's message and its reply


def test_a_reused_write_idempotency_key_for_another_target_is_409_idempotency_mismatch(client):
    headers, _ = _signed_up(client)
    item = {
        "item_type": "todo",
        "title": "交水费",
        "start_at": "2026-12-08T09:00:00+08:00",
        "end_at": "2026-12-08T10:00:00+08:00",
    }
    targets = []
    for _ in range(2):
        made = client.post(
            "/api/v1/write-requests",
            json={"action": "create", "target_type": "task_item", "payload": item, "preview_text": "新建"},
            headers=headers,
        ).json()
        decided = client.post(
            f"/api/v1/write-requests/{made['write_request_id']}/decide",
            json={"decision": "confirmed", "idempotency_key": uuid.uuid4().hex, "payload_hash": made["payload_hash"]},
            headers=headers,
        ).json()
        targets.append(decided["applied_target_id"])
    key = uuid.uuid4().hex

    def delete(target: str) -> httpx.Response:
        body = {
            "action": "delete",
            "target_type": "task_item",
            "target_id": target,
            "payload": {},
            "preview_text": "删除",
            "idempotency_key": key,
        }
        return client.post("/api/v1/write-requests", json=body, headers=headers)

    first = delete(targets[0])
    assert first.status_code == 201, first.text
    assert delete(targets[0]).json()["write_request_id"] == first.json()["write_request_id"]
    other = delete(targets[1])
    assert other.status_code == 409 and _code(other) == "idempotency_mismatch", other.text


def test_a_session_id_names_the_callers_own_session_never_reveals_another_users(client):
    sid = f"shared-{uuid.uuid4().hex[:10]}"
    owner, other = f"owner-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
    first = client.post("/api/v1/agent/chat", json={"user_id": owner, "session_id": sid, "text": "空调调到"})
    assert first.status_code == 200, first.text
    theirs = client.post("/api/v1/agent/chat", json={"user_id": other, "session_id": sid, "text": "打开车窗"})
    assert theirs.status_code == 200, theirs.text  # a session of their own: no 403 saying the id is taken
    fill = client.post(
        "/api/v1/agent/fill-slots",
        json={"user_id": f"third-{uuid.uuid4().hex[:8]}", "session_id": sid, "slots": {"temperature": 22}},
    )
    # no session of theirs by that id: the fallback answer, nothing of the owner's task continued, no 403
    assert fill.status_code == 200 and fill.json()["status"] != "completed", fill.text


def test_another_users_media_reads_as_missing_and_a_read_makes_no_user(client, serve_app, postgres):
    owner, stranger = f"media-{uuid.uuid4().hex[:8]}", f"stranger-{uuid.uuid4().hex[:8]}"
    upload = client.post(
        "/api/v1/media/upload",
        files={"file": ("a.png", blank_png(), "image/png")},
        data={"file_type": "image", "user_id": owner},
    )
    assert upload.status_code == 200, upload.text
    url = upload.json()["source_url"]
    assert client.get(url, params={"user_id": owner}).status_code == 200
    theirs = client.get(url, params={"user_id": stranger})
    missing = client.get("/api/v1/media/image/" + "0" * 32 + ".png", params={"user_id": stranger})
    assert (theirs.status_code, _code(theirs)) == (missing.status_code, _code(missing)) == (404, "media_not_found")
    assert _shadow_rows(postgres["dsn"], stranger) == 0  # reads made no account


def test_the_shadow_email_domain_is_reserved(client):
    for email in (f"{uuid.uuid4().hex[:32]}@shadow.invalid", "Someone@Shadow.Invalid"):
        taken = client.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD})
        assert taken.status_code == 409 and _code(taken) == "email_reserved", taken.text


@pytest.mark.parametrize("user_id", ["a b", "a/b", "x\u202e", "line\nbreak"])
def test_a_claimed_user_id_outside_the_one_rule_is_422_and_makes_no_user(client, postgres, user_id):
    answer = client.post("/api/v1/agent/chat", json={"user_id": user_id, "text": "打开车窗"})
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "user_id", answer.text
    assert _shadow_rows(postgres["dsn"], user_id) == 0
