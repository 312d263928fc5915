"""Bounded request bodies (serve_app/http/limits.py) over the real app and engine with fake models: refused with the
error envelope before the body is parsed or the turn runs."""

from __future__ import annotations

import httpx
import pytest

from config.limits import LimitsConfig
from serve_app.http.limits import too_deep
from tests.support.fakes import FakeModelClient, Rig, api_for, base_settings

CHAT = "/api/v1/agent/chat"
FILL = "/api/v1/agent/fill-slots"
LIMITS = LimitsConfig(max_body_bytes=4096, max_json_depth=8, ws_connections_per_user=2, ws_queued_frames=2)


def rig() -> Rig:
    settings = base_settings().model_copy(update={"limits": LIMITS, "max_text_chars": 20})
    return Rig(models=FakeModelClient().on("打开车窗", classifier=[("cabin_window_open", 0.95)]), settings=settings)


def client(r: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api_for(r.engine)), base_url="http://localhost")


def envelope(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code and error["message"]
    return error


async def test_a_body_declared_over_the_limit_is_refused_before_the_turn_runs():
    r = rig()
    async with client(r) as c:
        resp = await c.post(CHAT, json={"user_id": "u1", "text": "打开车窗", "session_id": "s" * 5000})
    assert "4096 bytes" in envelope(resp, 413, "body_too_large")["message"]
    assert r.models.texts("classifier") == []


async def test_a_chunked_body_is_cut_off_when_it_passes_the_limit():
    sent: list[int] = []

    async def chunks():
        for _ in range(100):  # 100 KiB offered, without a Content-Length
            sent.append(1)
            yield b" " * 1024

    r = rig()
    async with client(r) as c:
        resp = await c.post(CHAT, content=chunks(), headers={"content-type": "application/json"})
    envelope(resp, 413, "body_too_large")
    assert len(sent) < 100, "the rest of the body was not read"


async def test_deep_json_is_refused_before_it_is_parsed():
    settings = rig().settings  # a body cap over the 1 MiB sent: the depth, not the size, refuses it
    deep = Rig(settings=settings.model_copy(update={"limits": LIMITS.model_copy(update={"max_body_bytes": 2**21})}))
    async with client(deep) as c:
        resp = await c.post(CHAT, content=b"[" * 2**20, headers={"content-type": "application/json"})
    assert "8 levels" in envelope(resp, 400, "json_too_deep")["message"]


async def test_brackets_inside_strings_do_not_count_and_a_shallow_body_passes():
    r = rig()
    async with client(r) as c:
        resp = await c.post(CHAT, json={"user_id": "[[[[[[[[[[{{{{{{{{", "text": "打开车窗"})
    assert resp.status_code == 200, resp.text


async def test_a_text_over_the_configured_limit_is_refused_by_the_wire_model():
    r = rig()
    async with client(r) as c:
        resp = await c.post(CHAT, json={"user_id": "u1", "text": "开" * 21})
        fill = await c.post(FILL, json={"user_id": "u1", "session_id": "s1", "text": "开" * 21})
    for refused in (resp, fill):
        error = envelope(refused, 422, "text_too_long")
        assert error["field"] == "text" and "20" in error["message"]
    assert r.models.texts("classifier") == [], "refused while the body was validated, before the turn"


async def test_slots_are_bounded_in_keys():
    r = rig()
    async with client(r) as c:
        resp = await c.post(FILL, json={"user_id": "u1", "session_id": "s1", "slots": {f"k{i}": i for i in range(65)}})
    assert envelope(resp, 422, "object_too_large")["field"] == "slots"


@pytest.mark.parametrize(
    ("body", "deep"),
    [
        (b"[" * 9, True),
        (b"[" * 8 + b"]" * 8, False),
        (b'{"a": "' + b"[" * 100 + b'"}', False),
        (b'{"a": "\\"' + b"[" * 100 + b'"}', False),
        (b"[[[[]]]]" * 50, False),
        (b'"unterminated ' + b"[" * 20, False),
        (b'[{"a":[{"b":[{"c":[{"d":[1]}]}]}]}]', True),
    ],
)
def test_depth_counts_brackets_outside_strings(body, deep):
    assert too_deep(body, 8) is deep
