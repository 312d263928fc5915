"""The store-backed API on the real Serve app and a real PostgreSQL: auth, isolation, the write gate over HTTP,
the conversation log of chat turns, idempotent and racing turns, and a database restart under the running app."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import pytest

from tests.support.http_client import served_client

CHAT = "/api/v1/agent/chat"


@pytest.fixture(scope="module")
def client(serve_app):
    with served_client(serve_app["url"], 15.0) as c:
        yield c


def register(client, name="用户") -> dict:
    resp = client.post(
        "/api/v1/auth/register",
        json={"email": f"{uuid.uuid4().hex[:10]}@example.com", "password": "correct horse", "display_name": name},
    )
    assert resp.status_code == 201, resp.text
    body = resp.json()
    body["headers"] = {"Authorization": f"Bearer {body['access_token']}"}
    return body


def error_code(resp) -> str:
    return resp.json()["error"]["code"]


ITEM = {
    "item_type": "schedule",
    "title": "团队周会",
    "start_at": "2026-12-02T10:00:00+08:00",
    "end_at": "2026-12-02T11:00:00+08:00",
}


def create_item_request(client, user, payload=ITEM, **extra):
    body = {
        "action": "create",
        "target_type": "task_item",
        "payload": payload,
        "preview_text": "新建日程：团队周会",
        **extra,
    }
    resp = client.post("/api/v1/write-requests", json=body, headers=user["headers"])
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_register_login_me_and_bad_credentials(client):
    email = f"{uuid.uuid4().hex[:10]}@example.com"
    created = client.post(
        "/api/v1/auth/register", json={"email": email, "password": "long enough", "display_name": "小王"}
    )
    assert created.status_code == 201
    assert (
        error_code(client.post("/api/v1/auth/register", json={"email": email, "password": "long enough"}))
        == "email_taken"
    )
    login = client.post("/api/v1/auth/login", json={"email": email.upper(), "password": "long enough"})
    assert login.status_code == 200 and login.json()["user_id"] == created.json()["user_id"]
    wrong = client.post("/api/v1/auth/login", json={"email": email, "password": "wrong password"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    me = client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {login.json()['access_token']}"})
    assert me.json() == {
        "user_id": created.json()["user_id"],
        "business_user_id": created.json()["business_user_id"],
        "display_name": "小王",
    }
    assert client.get("/api/v1/auth/me").status_code == 401
    assert client.get("/api/v1/auth/me", headers={"Authorization": "Bearer not-a-token"}).status_code == 401
    assert client.get("/api/v1/auth/me", headers={"Authorization": "Basic abc"}).status_code == 401
    assert client.post("/api/v1/auth/register", json={"email": "x@y.z", "password": "short"}).status_code == 422


def test_write_request_round_trip_isolation_and_refusals(client):
    alice, bob = register(client, "alice"), register(client, "bob")
    created = create_item_request(client, alice)
    rid = created["write_request_id"]
    assert created["confirmation_payload"]["payload"]["title"] == "团队周会"
    decide = f"/api/v1/write-requests/{rid}/decide"
    assert (
        client.post(decide, json={"decision": "confirmed", "idempotency_key": "b"}, headers=bob["headers"]).status_code
        == 404
    )
    assert client.post(decide, json={"decision": "confirmed", "idempotency_key": "a"}).status_code == 401
    changed = client.post(
        decide,
        json={"decision": "confirmed", "idempotency_key": "a", "payload_hash": "f" * 64},
        headers=alice["headers"],
    )
    assert changed.status_code == 409 and error_code(changed) == "payload_changed"
    body = {"decision": "confirmed", "idempotency_key": "a", "payload_hash": created["payload_hash"]}
    first = client.post(decide, json=body, headers=alice["headers"])
    assert first.status_code == 200 and first.json()["status"] == "applied"
    assert client.post(decide, json=body, headers=alice["headers"]).json() == first.json()
    later = client.post(decide, json={"decision": "rejected", "idempotency_key": "other"}, headers=alice["headers"])
    assert later.status_code == 409 and error_code(later) == "already_decided"

    window = {"start_at": "2026-12-02T00:00:00+08:00", "end_at": "2026-12-03T00:00:00+08:00"}
    items = client.get("/api/v1/items/timeline", params=window, headers=alice["headers"]).json()["items"]
    assert [i["id"] for i in items] == [first.json()["applied_target_id"]]
    assert client.get("/api/v1/items/timeline", params=window, headers=bob["headers"]).json() == {"items": []}
    assert client.get(
        "/api/v1/items/timeline", params={**window, "item_type": "todo"}, headers=alice["headers"]
    ).json() == {"items": []}


def test_malformed_write_bodies_are_422_with_the_field(client):
    user = register(client)
    bad = client.post(
        "/api/v1/write-requests",
        json={"action": "create", "target_type": "task_item", "payload": {"item_type": "todo"}, "preview_text": "x"},
        headers=user["headers"],
    )
    assert bad.status_code == 422 and bad.json()["error"]["field"].startswith("payload")
    extra = client.post(
        "/api/v1/write-requests",
        json={"action": "create", "target_type": "task_item", "payload": ITEM, "preview_text": "x", "surprise": 1},
        headers=user["headers"],
    )
    assert extra.status_code == 422 and extra.json()["error"]["field"] == "surprise"
    assert (
        client.post(
            "/api/v1/write-requests",
            content=b"{not json",
            headers={**user["headers"], "content-type": "application/json"},
        ).status_code
        == 400
    )


def test_goal_with_subtask_and_profile(client):
    user = register(client)
    goal_req = client.post(
        "/api/v1/write-requests",
        json={
            "action": "create",
            "target_type": "long_goal",
            "payload": {"title": "三个月学会游泳"},
            "preview_text": "新建长目标",
        },
        headers=user["headers"],
    ).json()
    goal = client.post(
        f"/api/v1/write-requests/{goal_req['write_request_id']}/decide",
        json={"decision": "confirmed", "idempotency_key": "g"},
        headers=user["headers"],
    ).json()
    sub = create_item_request(
        client,
        user,
        {
            "item_type": "subtask",
            "title": "第一次下水",
            "long_goal_id": goal["applied_target_id"],
            "due_at": "2026-12-05T18:00:00+08:00",
        },
    )
    client.post(
        f"/api/v1/write-requests/{sub['write_request_id']}/decide",
        json={"decision": "confirmed", "idempotency_key": "s"},
        headers=user["headers"],
    )
    goals = client.get("/api/v1/long-goals", headers=user["headers"]).json()["goals"]
    assert [g["title"] for g in goals] == ["三个月学会游泳"]
    detail = client.get(f"/api/v1/long-goals/{goal['applied_target_id']}", headers=user["headers"]).json()
    assert [s["title"] for s in detail["subtasks"]] == ["第一次下水"] and detail["task_profile"] is None
    other = register(client)
    assert client.get(f"/api/v1/long-goals/{goal['applied_target_id']}", headers=other["headers"]).status_code == 404
    assert client.get("/api/v1/user/profile", headers=user["headers"]).json()["version"] == 0


def test_chat_turns_are_logged_with_seed_metadata_and_questions_close(client):
    user = register(client)
    sid = uuid.uuid4().hex
    ask = client.post(
        CHAT,
        json={"user_id": user["user_id"], "session_id": sid, "text": "把空调温度调一下", "client_message_id": "c1"},
        headers=user["headers"],
    )
    assert ask.status_code == 200 and ask.json()["status"] == "waiting_slot", ask.text
    snap = client.get("/api/v1/conversation/snapshot", headers=user["headers"]).json()
    assert (
        snap["pending_clarification"]["missing_fields"] == ["temperature"]
        and snap["pending_clarification"]["session_id"] == sid
    )
    done = client.post(
        CHAT,
        json={"user_id": user["user_id"], "session_id": sid, "text": "24度", "client_message_id": "c2"},
        headers=user["headers"],
    )
    assert done.json()["status"] == "completed" and done.json()["slots"]["temperature"] == 24
    messages = client.get("/api/v1/conversation/messages", params={"limit": 10}, headers=user["headers"]).json()
    kinds = [(m["role"], m["metadata"]["message_kind"]) for m in messages["messages"]]
    assert kinds == [
        ("user", "input"),
        ("assistant", "clarification_question"),
        ("user", "clarification_answer"),
        ("assistant", "execution_result"),
    ]
    question, answer = messages["messages"][1], messages["messages"][2]
    assert (
        question["metadata"]["question_id"] == question["id"] and question["metadata"]["question_status"] == "answered"
    )
    assert answer["metadata"]["reply_to_question_id"] == question["id"]
    assert all(m["metadata"]["session_id"] == sid for m in messages["messages"])
    assert [m["message_index"] for m in messages["messages"]] == [1, 2, 3, 4] and messages["has_more"] is False
    older = client.get(
        "/api/v1/conversation/messages", params={"limit": 2, "before_message_id": answer["id"]}, headers=user["headers"]
    ).json()
    assert [m["message_index"] for m in older["messages"]] == [1, 2] and older["has_more"] is False
    assert client.get("/api/v1/conversation/snapshot", headers=user["headers"]).json()["pending_clarification"] is None


def test_repeated_client_message_id_returns_the_stored_reply_and_runs_nothing(client):
    user = register(client)
    body = {"user_id": user["user_id"], "text": "打开车窗", "client_message_id": "same-1"}
    first = client.post(CHAT, json=body, headers=user["headers"]).json()
    second = client.post(CHAT, json=body, headers=user["headers"]).json()
    # the stored reply is the turn as it stood when its commit wrote it: the live answer also counts that last insert
    assert {k: v for k, v in second.items() if k != "timings"} == {k: v for k, v in first.items() if k != "timings"}
    assert first["status"] == "completed"
    assert second["timings"]["degraded"] == first["timings"]["degraded"]
    assert second["timings"]["total_ms"] <= first["timings"]["total_ms"]
    messages = client.get("/api/v1/conversation/messages", headers=user["headers"]).json()["messages"]
    assert len(messages) == 2


def test_token_binds_the_chat_and_a_mismatched_user_id_is_refused(client):
    user = register(client)
    wrong = client.post(CHAT, json={"user_id": "someone-else", "text": "打开车窗"}, headers=user["headers"])
    assert wrong.status_code == 403
    expired = client.post(
        CHAT, json={"user_id": user["user_id"], "text": "打开车窗"}, headers={"Authorization": "Bearer x.y.z"}
    )
    assert expired.status_code == 401


async def _race(url: str, sid: str, texts: list[str]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=15.0) as c:
        return await asyncio.gather(
            *(c.post(CHAT, json={"user_id": "racer", "session_id": sid, "text": t}) for t in texts)
        )


def test_racing_turns_on_one_session_run_one_at_a_time(client, serve_app):
    sid = uuid.uuid4().hex
    texts = ["打开车窗", "关闭车窗", "打开天窗", "关闭天窗", "打开座椅加热", "关闭座椅加热"]
    results = asyncio.run(_race(serve_app["url"], sid, texts))
    codes = sorted(r.status_code for r in results)
    assert set(codes) <= {200, 409} and 200 in codes, [(r.status_code, r.json().get("error")) for r in results]
    for r in results:
        if r.status_code == 409:
            assert r.json()["error"]["code"] == "session_busy" and "retry-after" in r.headers
    # the session is free again once the race is over
    probe = client.post(CHAT, json={"user_id": "racer", "session_id": sid, "text": "你好"})
    assert probe.status_code == 200


def test_database_restart_under_the_running_app(client, postgres):
    server = postgres["server"]
    if server is None:
        pytest.skip("an external DATABASE_URL cannot be restarted by the tests")
    user_id = f"restart-{uuid.uuid4().hex[:6]}"
    assert client.post(CHAT, json={"user_id": user_id, "text": "打开车窗"}).status_code == 200
    server.stop()
    try:
        down = client.post(CHAT, json={"user_id": user_id, "text": "关闭车窗"})
        assert down.status_code == 503 and down.json()["error"]["code"] == "store_unavailable"
        assert down.headers["retry-after"]
    finally:
        server.start()
    deadline = time.time() + 30
    while True:
        resp = client.post(CHAT, json={"user_id": user_id, "text": "关闭车窗"})
        if resp.status_code == 200 or time.time() > deadline:
            break
        time.sleep(0.5)
    assert resp.status_code == 200, resp.text
    user = register(client)
    assert client.get("/api/v1/auth/me", headers=user["headers"]).status_code == 200


def test_two_orchestrator_replicas_serve_one_conversation(client, serve_app):
    """The session's app runs two orchestrator replicas (tests/conftest.py)."""
    user_id, replicas = f"two-{uuid.uuid4().hex[:6]}", set()
    sid = None
    for _ in range(6):  # a slot-filling exchange, repeated: each answer needs the previous turn's state
        ask = client.post(
            CHAT, json={"user_id": user_id, "text": "空调温度调一下", **({"session_id": sid} if sid else {})}
        )
        sid = ask.json()["session_id"]
        done = client.post(CHAT, json={"user_id": user_id, "session_id": sid, "text": "二十三度"})
        assert (ask.json()["status"], done.json()["status"]) == ("waiting_slot", "completed"), done.text
        replicas |= {ask.headers["x-baton-replica"], done.headers["x-baton-replica"]}
    assert len(replicas) == 2, replicas
