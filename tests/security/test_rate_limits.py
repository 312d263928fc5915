"""Issue 34 item 11 against the real app (Serve, two Orchestrator replicas, PostgreSQL): password guessing, the
WebSocket's frames and transport.resume, and the OpenAI-compatible routes are limited, each refusal a 429 with
Retry-After and the error envelope (on the WebSocket a `rate_limited` error event with `retry_after_s`).

The limits are per replica (config/baton.yaml `rate_limits`), so each test sends enough for both replicas."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.support.ws_client import Conversation

PASSWORD = "correct horse battery"


def _rate_limited(response: httpx.Response) -> bool:
    if response.status_code != 429:
        return False
    assert int(response.headers["retry-after"]) >= 1, response.headers
    assert response.json()["error"]["code"] == "rate_limited", response.text
    return True


def test_guessing_one_accounts_password_is_refused_with_429_and_other_accounts_still_log_in(serve_app):
    with httpx.Client(base_url=serve_app["url"], timeout=30) as client:
        victim, bystander = f"{uuid.uuid4().hex[:12]}@example.com", f"{uuid.uuid4().hex[:12]}@example.com"
        for email in (victim, bystander):
            assert client.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
        guesses = [
            client.post("/api/v1/auth/login", json={"email": victim, "password": f"guess {n:04d}"}) for n in range(36)
        ]
        assert {r.status_code for r in guesses} <= {401, 429}, [r.text for r in guesses if r.status_code >= 500]
        refused = [r for r in guesses if _rate_limited(r)]
        # 5 free failures per replica (two replicas), then the account waits 1 s, 2 s, 4 s, ... after each failure
        # (each refusal answered after up to 1 s): most guesses never reach argon2
        assert len(refused) >= 12, [r.status_code for r in guesses]
        assert sum(r.status_code == 401 for r in guesses) <= 24, [r.status_code for r in guesses]
        other = client.post("/api/v1/auth/login", json={"email": bystander, "password": PASSWORD})
        assert other.status_code == 200, other.text


def test_websocket_frames_past_the_connections_rate_get_a_typed_rate_limited_event(serve_app):
    conversation = Conversation(serve_app["url"], headers={}, query=f"?user_id=frames-{uuid.uuid4().hex[:8]}")
    try:
        for n in range(120):
            conversation.send("transport.ping", {"nonce": str(n)})
        events = [conversation.ws.recv(timeout=20) for _ in range(120)]
    finally:
        conversation.close()
    errors = [e for e in map(_json, events) if e["type"] == "dialogue.error"]
    assert errors, "120 frames at once were all answered"
    assert {e["payload"]["code"] for e in errors} == {"rate_limited"}
    assert all(e["payload"]["retry_after_s"] >= 1 for e in errors)


def test_transport_resume_is_limited_per_user(serve_app):
    conversation = Conversation(serve_app["url"], headers={}, query=f"?user_id=resume-{uuid.uuid4().hex[:8]}")
    try:
        for _ in range(20):
            conversation.send("transport.resume", {})
        events = [_json(conversation.ws.recv(timeout=20)) for _ in range(20)]
    finally:
        conversation.close()
    codes = [e["payload"].get("code") for e in events if e["type"] == "dialogue.error"]
    assert "rate_limited" in codes, [e["type"] for e in events]
    assert any(e["type"] == "transport.snapshot" for e in events)


def test_external_completions_past_their_concurrency_cap_are_refused_not_queued(serve_app):
    """/v1 clients share the language model with the turns' planner: past `openai_max_in_flight` per replica they
    get 429 at once instead of queueing in front of the turns."""
    model = httpx.get(f"{serve_app['url']}/v1/models", timeout=10).json()["data"][0]["id"]
    body = {"model": model, "messages": [{"role": "user", "content": "你好"}], "max_tokens": 8}

    def complete(_: int) -> httpx.Response:
        return httpx.post(f"{serve_app['url']}/v1/chat/completions", json=body, timeout=120)

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(complete, range(16)))
    statuses = [r.status_code for r in answers]
    assert not [s for s in statuses if s >= 500 and s != 504], statuses
    assert any(_rate_limited(r) for r in answers), statuses


def _json(text: str | bytes) -> dict:
    return json.loads(text)
