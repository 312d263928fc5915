"""The OpenAI-compatible backend client over a real HTTP connection to an in-process OpenAI-wire server on 127.0.0.1:
what it sends, how each failure becomes a named fallback, that the turn's deadline closes the connection (the server
sees it), that a full backend refuses at once, and that the key reaches the server and nothing else."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
from pydantic import SecretStr

from config.llm import LlmBackend
from engine.deadline import Deadline, StageTimeout
from engine.llm.lm import LmFailed, LmRequest, complete_within, new_request_id
from serve_app.llm_backends.openai_lm import OpenAiLanguageModel
from serve_app.metrics import LlmMetrics
from tests.support.openai_server import OpenAiWire, Script

KEY = "sk-test-3f9a0c5e7d1b4a2f"
SCHEMA = {"type": "object", "properties": {"steps": {"type": "array"}}, "required": ["steps"]}


@pytest.fixture
async def wire():
    server = await OpenAiWire(key=KEY).start()
    yield server
    await server.stop()


def backend(wire: OpenAiWire, **over) -> LlmBackend:
    return LlmBackend(**{"base_url": wire.base_url, "model": "qwen-plus", "timeout_s": 5.0, **over})


def model(wire: OpenAiWire, key: str | None = KEY, **over) -> OpenAiLanguageModel:
    return OpenAiLanguageModel("qwen", backend(wire, **over), SecretStr(key) if key else None, metrics=LlmMetrics())


def request(schema=None) -> LmRequest:
    return LmRequest(
        messages=[{"role": "system", "content": "规划"}, {"role": "user", "content": "打开车窗"}],
        json_schema=schema,
        max_tokens=64,
        temperature=0.0,
        request_id=new_request_id("t"),
    )


async def test_a_plan_comes_back_with_its_usage_and_the_request_says_what_the_backend_honours(wire):
    wire.script = Script(text='{"steps":[{"intent_id":"cabin_window_open"}]}')
    reply = await model(wire, json_schema=True, headers={"X-DashScope-SSE": "disable"}).complete(request(SCHEMA))
    assert json.loads(reply.text)["steps"][0]["intent_id"] == "cabin_window_open"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.finish_reason) == (11, 7, "stop")
    sent, headers = wire.requests[0], wire.headers[0]
    assert sent["model"] == "qwen-plus" and sent["messages"][1] == {"role": "user", "content": "打开车窗"}
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA and sent["max_tokens"] == 64
    assert headers["authorization"] == f"Bearer {KEY}" and headers["x-dashscope-sse"] == "disable"
    # an endpoint that does not honour JSON schemas is not sent one: the prompt asks, validation checks
    await model(wire).complete(request(SCHEMA))
    assert "response_format" not in wire.requests[1]


async def test_the_turns_deadline_cancels_the_call_and_the_server_sees_the_connection_closed(wire):
    wire.script = Script(delay=5.0)
    lm = model(wire)
    deadline = Deadline(400.0)
    t0 = time.perf_counter()
    with pytest.raises(StageTimeout):
        await complete_within(lm, request(), deadline=deadline, stage="planner_llm", budget_s=0.3)
    assert time.perf_counter() - t0 < 0.8
    await asyncio.wait_for(wire.closed.wait(), 2.0)
    assert wire.closed_early == 1 and wire.in_flight == 0


async def test_a_cancelled_caller_closes_the_connection_too(wire):
    wire.script = Script(delay=5.0)
    task = asyncio.ensure_future(model(wire).complete(request()))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(wire.closed.wait(), 2.0)


async def test_past_max_concurrency_a_call_fails_at_once_as_busy_and_never_queues(wire):
    wire.script = Script(delay=0.5)
    lm = model(wire, max_concurrency=1)
    first = asyncio.ensure_future(lm.complete(request()))
    await asyncio.sleep(0.1)
    t0 = time.perf_counter()
    with pytest.raises(LmFailed) as failed:
        await lm.for_route("reply").complete(request())  # routes share the bound
    assert failed.value.busy and time.perf_counter() - t0 < 0.05 and "busy" in failed.value.reason
    await first
    assert wire.most_in_flight == 1
    await lm.complete(request())  # the slot is free again


@pytest.mark.parametrize(
    ("script", "key", "said"),
    [
        (Script(status=500), KEY, "qwen: HTTP 500"),
        (Script(status=429), KEY, "qwen: HTTP 429"),
        (Script(), "sk-wrong-key-000000", "qwen: HTTP 401"),
        (Script(raw=b"<html>gateway</html>"), KEY, "qwen: malformed answer"),
        (Script(raw=b'{"choices": []}'), KEY, "qwen: malformed answer (no choices)"),
        (Script(raw=b'{"choices": [{"index": 0, "message": {"role": "assistant"}}]}'), KEY, "malformed answer"),
    ],
)
async def test_each_failure_is_a_named_fallback_without_the_key_or_the_body(wire, script, key, said, caplog):
    wire.script = script
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LmFailed) as failed:
        await model(wire, key=key).complete(request())
    assert said in failed.value.reason and not failed.value.busy
    for secret in (KEY, key, "gateway", "Incorrect API key", "upstream failed"):
        assert secret not in failed.value.reason
    assert KEY not in caplog.text and key not in caplog.text


async def test_a_refused_connection_and_the_sdk_timeout_are_named(wire):
    await wire.stop()
    with pytest.raises(LmFailed, match="qwen: connection failed"):
        await model(wire).complete(request())
    server = await OpenAiWire(script=Script(delay=3.0)).start()
    try:
        slow = OpenAiLanguageModel("qwen", backend(server, timeout_s=0.2), None)  # the SDK's timeout: 0.2 s + margin
        with pytest.raises(LmFailed, match="qwen: timed out after 0.2 s"):
            await slow.complete(request())
    finally:
        await server.stop()


async def test_a_keyless_endpoint_is_sent_a_placeholder_and_no_environment_credential(wire, monkeypatch):
    for name, value in {"OPENAI_API_KEY": "sk-from-env", "OPENAI_ORG_ID": "org-x", "OPENAI_PROJECT_ID": "p-x"}.items():
        monkeypatch.setenv(name, value)
    wire.key = None
    await model(wire, key=None).complete(request())
    headers = wire.headers[0]
    assert headers["authorization"] == "Bearer EMPTY"
    assert "sk-from-env" not in json.dumps(headers) and "org-x" not in json.dumps(headers)


async def test_the_stream_yields_deltas_and_closing_it_closes_the_connection(wire):
    wire.script = Script(text="你好呀", stream_delay=0.05)
    deltas = [d async for d in model(wire).stream(request())]
    assert "".join(d["text"] for d in deltas) == "你好呀" and deltas[-1]["finish_reason"] == "stop"
    assert deltas[-1]["completion_tokens"] == 3
    wire.script = Script(text="一二三四五六七八九十" * 5, stream_delay=0.1)
    stream = model(wire).stream(request())
    first = await stream.__anext__()
    assert first["text"] == "一"
    await stream.aclose()
    await asyncio.wait_for(wire.closed.wait(), 2.0)


async def test_abort_stops_only_the_named_call(wire):
    wire.script = Script(delay=5.0)
    lm = model(wire)
    req = request()
    task = asyncio.ensure_future(lm.complete(req))
    await asyncio.sleep(0.2)
    await lm.abort(req.request_id)
    with pytest.raises(LmFailed, match="aborted"):
        await task
    await asyncio.wait_for(wire.closed.wait(), 2.0)
    await lm.abort("unknown")  # a no-op
