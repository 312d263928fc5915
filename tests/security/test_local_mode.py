"""Issue 34, items 4 and 5, on the served app (Serve, HAProxy, PostgreSQL): a web page the operator visits cannot act
as a local user. A request naming a foreign Host (DNS rebinding) answers 421; a WebSocket opened by another origin is
closed with 1008 `origin_not_allowed` before any frame; a cross-origin POST answers 403; the demo page takes no
`user_id` from its URL; and the run's HAProxy keeps its files, its admin socket and its stats to itself."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from serve_app.ops import node_env

EVIL = "http://evil.example"


def _ws(url: str, **kwargs):
    return connect(
        url.replace("http://", "ws://") + "/ws/v1/conversation?user_id=local-victim", open_timeout=30, **kwargs
    )


def test_a_rebound_host_name_is_refused(serve_app):
    port = serve_app["url"].rsplit(":", 1)[1]
    with httpx.Client(base_url=serve_app["url"], timeout=30) as client:
        for method, path in (("GET", "/health"), ("GET", "/api/v1/metrics/summary"), ("POST", "/api/v1/agent/chat")):
            answer = client.request(
                method,
                path,
                headers={"Host": f"rebind.attacker.test:{port}"},
                json={"user_id": "local-victim", "text": "打开车窗"},
            )
            assert answer.status_code == 421, (path, answer.text)
            assert answer.json()["error"]["code"] == "host_not_allowed" and answer.json()["error"]["field"] == "Host"
        assert client.get("/health", headers={"Host": f"localhost:{port}"}).status_code == 200


def test_a_cross_origin_post_is_refused_and_a_program_without_origin_is_not(serve_app):
    with httpx.Client(base_url=serve_app["url"], timeout=60) as client:
        chat = {"user_id": "local-victim", "text": "打开车窗"}
        refused = client.post("/api/v1/agent/chat", json=chat, headers={"Origin": EVIL})
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "origin_not_allowed"
        login = {"email": "nobody@local.test", "password": "whatever1"}
        assert client.post("/api/v1/auth/login", json=login, headers={"Origin": EVIL}).status_code == 403
        assert client.post("/api/v1/auth/login", json=login).status_code == 401  # curl, SDKs: no Origin
        same = client.post("/api/v1/auth/login", json=login, headers={"Origin": serve_app["url"]})
        assert same.status_code == 401  # the app's own page


def test_a_cross_origin_websocket_is_closed_before_any_frame(serve_app):
    with _ws(serve_app["url"], origin=EVIL) as socket:
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=30)
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1008, "origin_not_allowed")

    for origin in (serve_app["url"], None):  # the demo page itself, and a program
        with _ws(serve_app["url"], origin=origin) as socket:
            socket.send(json.dumps({"type": "transport.ping", "payload": {"nonce": "n1"}}))
            assert json.loads(socket.recv(timeout=30))["type"] == "transport.pong"


def test_the_demo_page_takes_no_user_id_from_its_url(serve_app):
    with httpx.Client(base_url=serve_app["url"], timeout=30) as client:
        page = client.get("/demo/app.js")
        assert page.status_code == 200
    assert "location.search" not in page.text and "URLSearchParams" not in page.text
    assert 'localStorage.getItem("baton.user_id")' in page.text  # a per-browser id, or the one typed in


def test_the_run_keeps_its_haproxy_private(serve_app):
    port = int(serve_app["url"].rsplit(":", 1)[1])
    folder = node_env.haproxy_dir(port)  # the folder the session's launcher made for this run
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not (Path("/tmp") / f"baton-haproxy-{port}").exists()
    sockets = list(folder.glob("*/admin.sock"))
    assert sockets and all(stat.S_IMODE(s.stat().st_mode) == 0o600 for s in sockets)
    config = next(folder.glob("*/haproxy.cfg")).read_text(encoding="utf-8")
    assert "mode 666" not in config and "option httplog" not in config and "%HP" in config
    stats_port, metrics_port = (int(os.environ[f"RAY_SERVE_HAPROXY_{n}_PORT"]) for n in ("STATS", "METRICS"))
    listening = _listening_addresses()
    for private in (stats_port, metrics_port):
        assert listening.get(private) == {"127.0.0.1"}, (private, listening.get(private))


def _listening_addresses() -> dict[int, set[str]]:
    """TCP ports listening on this machine, with the IPv4 addresses they are bound to (/proc/net/tcp)."""
    found: dict[int, set[str]] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state != "0A":  # LISTEN
            continue
        address, port = local.split(":")
        ip = ".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0))
        found.setdefault(int(port, 16), set()).add(ip)
    return found


@pytest.mark.store
async def test_the_sessions_postgresql_socket_is_private_to_its_server(postgres):
    """Item 6 on the server the served app writes to: trust auth on the socket, so its folder (0700) and the socket's
    own permissions are what keep the machine's other accounts out."""
    import asyncpg

    if postgres["server"] is None:
        pytest.skip("DATABASE_URL names an external server: its socket is its operator's")  # the embedded one in CI
    socket_dir = Path(postgres["dsn"].split("host=", 1)[1])
    assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(s.stat().st_mode) & 0o077 == 0 for s in socket_dir.glob(".s.PGSQL.*[0-9]"))
    conn = await asyncpg.connect(postgres["dsn"])
    try:
        assert await conn.fetchval("SHOW unix_socket_permissions") == "0700"
    finally:
        await conn.close()
