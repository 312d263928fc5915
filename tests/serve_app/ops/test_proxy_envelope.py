"""The proxy middleware: plain-text 429/503 sheds become Baton's envelope; everything else passes untouched."""

from __future__ import annotations

import json

import httpx
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from serve_app.ops.proxy_envelope import ProxyShedEnvelope


def _app(response):
    return ProxyShedEnvelope(Starlette(routes=[Route("/", lambda request: response)]))


async def _get(app) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy") as client:
        return await client.get("/")


async def test_backpressure_text_becomes_the_envelope_and_keeps_retry_after():
    shed = PlainTextResponse(
        "Request dropped due to backpressure (num_queued_requests=8, max_queued_requests=8).",
        status_code=503,
        headers={"Retry-After": "1"},
    )
    resp = await _get(_app(shed))
    assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
    assert resp.headers["content-type"] == "application/json"
    assert resp.json()["error"]["code"] == "overloaded" and int(resp.headers["content-length"]) == len(resp.content)


async def test_other_proxy_503_is_unavailable():
    resp = await _get(_app(PlainTextResponse("Deployment is not available.", status_code=503)))
    assert resp.json()["error"]["code"] == "unavailable" and "not available" in resp.json()["error"]["message"]


async def test_baton_json_and_normal_answers_pass_through():
    ours = JSONResponse({"error": {"code": "store_unavailable", "message": "m", "field": None}}, status_code=503)
    assert (await _get(_app(ours))).json()["error"]["code"] == "store_unavailable"
    ok = await _get(_app(PlainTextResponse("hello")))
    assert ok.status_code == 200 and ok.text == "hello"
    assert json.loads((await _get(_app(JSONResponse({"a": 1})))).content) == {"a": 1}
