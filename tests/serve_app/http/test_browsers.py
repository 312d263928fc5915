"""The browser guard in front of every route (fake models, no store): in the local mode a Host that is not a loopback
name or an allowed one answers 421; in any mode a browser request from another origin is refused (a state-changing
HTTP request 403, the WebSocket closed with 1008 `origin_not_allowed`); programs that send no Origin pass."""

from __future__ import annotations

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from serve_app.http.browsers import is_loopback, split_host
from tests.support.fakes import Rig, api_for, base_settings

LOGIN = "/api/v1/auth/login"
CREDENTIALS = {"email": "a@b.test", "password": "whatever1"}


def _api(**auth):
    settings = base_settings()
    settings = settings.model_copy(update={"auth": settings.auth.model_copy(update=auth)})
    return api_for(Rig(settings=settings).engine, settings)


def _client(api, host: str = "127.0.0.1:8000") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url=f"http://{host}")


def test_loopback_names_and_host_headers():
    for host in ("127.0.0.1", "127.8.9.10", "localhost", "LOCALHOST", "::1", "[::1]"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "10.0.0.1", "localhost.evil.example", "evil.example", "::", ""):
        assert not is_loopback(host), host
    assert split_host("Example.COM:8000") == ("example.com", 8000)
    assert split_host("[::1]:8000") == ("::1", 8000) and split_host("[::1]") == ("::1", None)
    assert split_host("localhost.") == ("localhost", None)


@pytest.mark.parametrize("host", ["evil.example:8000", "rebound.attacker.test", "10.0.0.7:8000"])
async def test_the_local_mode_refuses_a_host_that_is_not_its_own(host):
    async with _client(_api(), host) as client:
        for answer in (await client.get("/health"), await client.post(LOGIN, json=CREDENTIALS)):
            assert answer.status_code == 421
            assert answer.json()["error"] == {
                "code": "host_not_allowed",
                "message": answer.json()["error"]["message"],
                "field": "Host",
            }


async def test_allowed_hosts_and_loopback_names_pass_and_tokens_skip_the_host_check():
    async with _client(_api(allowed_hosts=["baton.lan"]), "baton.lan:8000") as client:
        assert (await client.get("/health")).status_code != 421
    for host in ("localhost:8000", "127.0.0.1", "[::1]:8000"):
        async with _client(_api(), host) as client:
            assert (await client.get("/health")).status_code != 421, host
    async with _client(_api(require_token=True), "baton.example.com") as client:
        assert (await client.get("/health")).status_code != 421


@pytest.mark.parametrize("require_token", [False, True])
async def test_a_cross_origin_state_changing_request_is_refused(require_token):
    async with _client(_api(require_token=require_token)) as client:
        refused = await client.post(LOGIN, json=CREDENTIALS, headers={"Origin": "http://evil.example"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "origin_not_allowed"
        assert refused.json()["error"]["field"] == "Origin"
        opaque = await client.post(LOGIN, json=CREDENTIALS, headers={"Origin": "null"})
        assert opaque.status_code == 403
        other_port = await client.post(LOGIN, json=CREDENTIALS, headers={"Origin": "http://127.0.0.1:9999"})
        assert other_port.status_code == 403
        # the app's own page, and programs that send no Origin, are not refused (no store here: 503)
        same = await client.post(LOGIN, json=CREDENTIALS, headers={"Origin": "http://127.0.0.1:8000"})
        assert same.status_code == 503
        assert (await client.post(LOGIN, json=CREDENTIALS)).status_code == 503
        # a read is not a state change
        read = await client.get("/health", headers={"Origin": "http://evil.example"})
        assert read.status_code != 403


async def test_allowed_origins_may_post_and_tls_in_front_keeps_same_origin():
    async with _client(_api(allowed_origins=["https://console.example"])) as client:
        allowed = await client.post(LOGIN, json=CREDENTIALS, headers={"Origin": "https://console.example"})
        assert allowed.status_code == 503
    async with _client(_api(require_token=True), "baton.example.com") as client:
        behind_tls = await client.post(LOGIN, json=CREDENTIALS, headers={"Origin": "https://baton.example.com"})
        assert behind_tls.status_code == 503


def _socket_close(api, origin: str | None) -> tuple[int, str]:
    headers = {"Origin": origin} if origin else {}
    with TestClient(api, base_url="http://127.0.0.1:8000") as client:
        with client.websocket_connect("ws://127.0.0.1:8000/ws/v1/conversation?user_id=victim", headers=headers) as ws:
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_text()
    return closed.value.code, closed.value.reason


def test_a_cross_origin_websocket_is_closed_with_1008_before_it_is_authenticated():
    api = _api()
    assert _socket_close(api, "http://evil.example") == (1008, "origin_not_allowed")
    assert _socket_close(api, "http://localhost.evil.example:8000") == (1008, "origin_not_allowed")
    # same origin, or no Origin at all (a program): on to authentication (no store here: 1011)
    assert _socket_close(api, "http://127.0.0.1:8000") == (1011, "store_unavailable")
    assert _socket_close(api, None) == (1011, "store_unavailable")
