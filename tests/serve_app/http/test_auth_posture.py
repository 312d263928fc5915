"""Who owns what, over real sockets (uvicorn, the real store on PostgreSQL, fake models): with `auth.require_token`
nothing answers without a valid token, over HTTP and the WebSocket; and in either mode a claimed `user_id` never
reaches another account's data — ownership is the account's UUID, never the string a request claims."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from benchmarks.media_samples import blank_png
from tests.support.fakes import base_settings
from tests.support.store_app import served, store_app

CHAT, UPLOAD = "/api/v1/agent/chat", "/api/v1/media/upload"


def _settings(require_token: bool):
    settings = base_settings()
    return settings.model_copy(update={"auth": settings.auth.model_copy(update={"require_token": require_token})})


@pytest.fixture(scope="module")
def strict(postgres, tmp_path_factory):
    """The app with auth.require_token: the token-less local mode off."""
    with served(store_app(postgres["dsn"], tmp_path_factory.mktemp("media"), _settings(True))) as url:
        yield url


@pytest.fixture(scope="module")
def local(postgres, tmp_path_factory):
    """The app in the local mode (a request without a token acts as the user_id it names)."""
    with served(store_app(postgres["dsn"], tmp_path_factory.mktemp("media"), _settings(False))) as url:
        yield url


def account(client: httpx.Client) -> dict:
    created = client.post(
        "/api/v1/auth/register", json={"email": f"{uuid.uuid4().hex[:10]}@posture.test", "password": "long enough"}
    )
    assert created.status_code == 201, created.text
    body = created.json()
    return {**body, "headers": {"Authorization": f"Bearer {body['access_token']}"}}


def upload(client: httpx.Client, **kwargs) -> httpx.Response:
    return client.post(UPLOAD, files={"file": ("x.png", blank_png())}, **kwargs)


def refused(resp: httpx.Response, status: int, code: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["code"] == code


def ws(url: str, query: str = "", headers: dict | None = None):
    return connect(
        url.replace("http://", "ws://") + "/ws/v1/conversation" + query,
        additional_headers=headers or {},
        open_timeout=10,
    )


def frame(type_: str, payload: dict) -> str:
    return json.dumps({"type": type_, "timestamp": "2026-12-01T10:00:00+08:00", "payload": payload})


def closed_unauthorized(connection) -> None:
    with pytest.raises(ConnectionClosed) as closed:
        connection.recv(timeout=10)
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1008, "unauthorized")


def test_with_tokens_required_nothing_answers_without_one(strict):
    with httpx.Client(base_url=strict, timeout=30) as client:
        owner = account(client)
        image = upload(client, data={"file_type": "image"}, headers=owner["headers"]).json()
        for resp in (
            client.post(CHAT, json={"user_id": "local-user", "text": "打开车窗"}),
            client.post(CHAT, json={"user_id": owner["user_id"], "text": "打开车窗"}),
            client.post("/api/v1/agent/chat-stream", json={"user_id": owner["user_id"], "text": "打开车窗"}),
            upload(client, data={"file_type": "image", "user_id": "local-user"}),
            client.get(image["source_url"], params={"user_id": owner["user_id"]}),
            client.get(image["source_url"], headers={"X-User-Id": owner["user_id"]}),
            client.post(
                CHAT,
                json={"user_id": owner["user_id"], "text": "打开车窗"},
                headers={"Authorization": "Bearer forged.token.here"},
            ),
        ):
            refused(resp, 401, "unauthorized")
            assert resp.headers["www-authenticate"] == "Bearer"
    with ws(strict, f"?user_id={owner['user_id']}") as connection:
        closed_unauthorized(connection)
    with ws(strict, "?access_token=forged.token.here") as connection:
        closed_unauthorized(connection)


def test_with_tokens_required_a_token_acts_for_its_own_account_only(strict):
    with httpx.Client(base_url=strict, timeout=30) as client:
        owner, other = account(client), account(client)
        turn = client.post(CHAT, json={"user_id": owner["user_id"], "text": "打开车窗"}, headers=owner["headers"])
        assert turn.status_code == 200, turn.text
        image = upload(client, data={"file_type": "image"}, headers=owner["headers"]).json()
        assert client.get(image["source_url"], headers=owner["headers"]).content == blank_png()
        refused(client.get(image["source_url"], headers=other["headers"]), 404, "media_not_found")
        # claiming the owner's id with another account's token is refused before anything runs
        refused(
            client.post(CHAT, json={"user_id": owner["user_id"], "text": "打开车窗"}, headers=other["headers"]),
            403,
            "session_forbidden",
        )
        foreign = client.post(
            CHAT,
            json={"user_id": other["user_id"], "modality": "image_ocr", "source_url": image["source_url"]},
            headers=other["headers"],
        )
        refused(foreign, 403, "media_forbidden")
    with ws(strict, f"?access_token={owner['access_token']}") as connection:
        connection.send(frame("transport.ping", {}))
        assert json.loads(connection.recv(timeout=10))["type"] == "transport.pong"


def test_in_the_local_mode_a_claimed_uuid_is_not_that_account(local):
    """Before, the media store owned a token user's objects by the UUID string, and a token-less request claiming
    that string passed the ownership check. Now the claim names a shadow account with a UUID of its own."""
    with httpx.Client(base_url=local, timeout=30) as client:
        owner = account(client)
        image = upload(client, data={"file_type": "image"}, headers=owner["headers"]).json()
        claimed = {"user_id": owner["user_id"]}
        refused(client.get(image["source_url"], params=claimed), 404, "media_not_found")
        refused(client.get(image["source_url"], headers={"X-User-Id": owner["user_id"]}), 404, "media_not_found")
        refused(
            client.post(CHAT, json={**claimed, "modality": "image_ocr", "source_url": image["source_url"]}),
            403,
            "media_forbidden",
        )
        # the business id is no key either
        refused(client.get(image["source_url"], params={"user_id": owner["business_user_id"]}), 404, "media_not_found")
        # a local user still reads what it uploaded itself
        mine = upload(client, data={"file_type": "image", "user_id": "local-user"}).json()
        assert client.get(mine["source_url"], params={"user_id": "local-user"}).content == blank_png()
    with ws(local, f"?user_id={owner['user_id']}") as connection:
        connection.send(
            frame(
                "dialogue.input",
                {"client_message_id": uuid.uuid4().hex, "modality": "image_ocr", "source_url": image["source_url"]},
            )
        )
        events = []
        while not events or events[-1]["type"] not in ("dialogue.error", "execution.error", "dialogue.decision"):
            events.append(json.loads(connection.recv(timeout=20)))
    assert events[-1]["type"] == "dialogue.error" and events[-1]["payload"]["code"] == "media_forbidden", events


def test_the_document_of_a_strict_deployment_has_no_local_mode(strict, local):
    strict_doc, local_doc = (httpx.get(f"{url}/openapi.json").json() for url in (strict, local))
    chat = ("/api/v1/agent/chat", "post")
    media = ("/api/v1/media/{kind}/{file_name}", "get")
    assert local_doc["paths"][chat[0]][chat[1]]["security"] == [{"bearerAuth": []}, {}]
    for path, method in (chat, media, ("/api/v1/media/upload", "post")):
        assert strict_doc["paths"][path][method]["security"] == [{"bearerAuth": []}], path
    assert set(strict_doc["components"]["securitySchemes"]) == {"bearerAuth"}
    assert "Local mode" not in strict_doc["components"]["securitySchemes"]["bearerAuth"]["description"]


def test_the_openai_compatible_routes_take_a_token_when_tokens_are_required(strict, local):
    body = {"model": "baton-planner", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    with httpx.Client(base_url=strict, timeout=10) as client:
        refused(client.get("/v1/models"), 401, "unauthorized")
        refused(
            client.post("/v1/chat/completions", json=body, headers={"Authorization": "Bearer local"}),
            401,
            "unauthorized",
        )
        owner = account(client)
        assert client.get("/v1/models", headers=owner["headers"]).json()["data"][0]["id"] == "baton-planner"
        assert client.post("/v1/chat/completions", json=body, headers=owner["headers"]).status_code == 200
    with httpx.Client(base_url=local, timeout=10) as client:  # the local mode: an api_key is not read
        assert (
            client.post("/v1/chat/completions", json=body, headers={"Authorization": "Bearer local"}).status_code == 200
        )
