"""The OpenAI-compatible routes in process, around a fake language model: the wire shapes the `openai` SDK reads,
response_format reaching the engine as a schema, streaming as server-sent events, and every refusal typed. The
real model answers them in tests/integration/test_llm_served.py."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from config.llm import LlmConfig
from engine.deadline import Deadline
from engine.llm.lm import PRIORITY_EXTERNAL
from serve_app.turns.admission import Admission
from tests.support.fakes import ONE_AT_A_TIME, FakeLlm, api_for, base_settings

MODEL = "baton-planner"


class Engine:
    def __init__(self) -> None:
        self.pack = type("P", (), {"name": "stub"})()

    def deadline(self, modality, *, arrived=None):
        return Deadline(600, started=arrived or time.time())


def client_for(llm, **cfg) -> httpx.AsyncClient:
    settings = base_settings().model_copy(update={"llm": LlmConfig(**cfg)})
    api = api_for(Engine(), settings, admission=Admission(ONE_AT_A_TIME), llm=llm)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://localhost")


def body(**extra):
    return {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Answer in JSON."},
            {"role": "user", "content": [{"type": "text", "text": "是否可以？"}]},
        ],
        **extra,
    }


async def test_models_lists_the_served_model_and_a_completion_has_the_openai_shape():
    llm = FakeLlm()
    async with client_for(llm) as client:
        models = (await client.get("/v1/models")).json()
        assert models["object"] == "list" and [m["id"] for m in models["data"]] == [MODEL]
        answer = await client.post("/v1/chat/completions", json=body(max_tokens=20, temperature=0.3))
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["object"] == "chat.completion" and data["model"] == MODEL and data["id"].startswith("chatcmpl-")
    assert data["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": '{"ok":true}'}, "finish_reason": "stop"}
    ]
    assert data["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    sent = llm.requests[0]
    assert sent.messages == [
        {"role": "system", "content": "Answer in JSON."},
        {"role": "user", "content": "是否可以？"},
    ]
    assert (
        sent.max_tokens == 20
        and sent.temperature == 0.3
        and sent.priority == PRIORITY_EXTERNAL
        and sent.json_schema is None
    )


@pytest.mark.parametrize(
    "response_format,schema",
    [
        (
            {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object", "required": ["ok"]}}},
            {"type": "object", "required": ["ok"]},
        ),
        ({"type": "json_object"}, {"type": "object"}),
        ({"type": "text"}, None),
    ],
)
async def test_response_format_reaches_the_engine_as_its_schema(response_format, schema):
    llm = FakeLlm()
    async with client_for(llm) as client:
        assert (
            await client.post("/v1/chat/completions", json=body(response_format=response_format))
        ).status_code == 200
    assert llm.requests[0].json_schema == schema


async def test_a_stream_is_server_sent_chunks_ending_with_usage_and_done():
    llm = FakeLlm()
    async with client_for(llm) as client:
        answer = await client.post("/v1/chat/completions", json=body(stream=True))
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    events = [line.removeprefix("data: ") for line in answer.text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == '{"ok":true}'
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["usage"]["completion_tokens"] == 3


async def test_a_stream_past_the_time_limit_is_cut_and_says_abort():
    llm = FakeLlm(delay=0.2)
    async with client_for(llm, request_timeout_s=0.3) as client:
        answer = await client.post("/v1/chat/completions", json=body(stream=True))
    chunks = [
        json.loads(line.removeprefix("data: ")) for line in answer.text.split("\n\n") if line and "[DONE]" not in line
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "abort"
    assert llm.closed == 1  # the engine's stream was closed: the request aborted there


@pytest.mark.parametrize(
    "change,status,code,field",
    [
        ({"model": "gpt-4o"}, 404, "model_not_found", "model"),
        ({"max_tokens": 100_000}, 422, "invalid_input", "max_tokens"),
        ({"n": 2}, 422, "invalid_field", "n"),
        ({"messages": []}, 422, "invalid_field", "messages"),
        ({"response_format": {"type": "json_schema"}}, 422, "missing_field", "response_format.json_schema.json_schema"),
    ],
)
async def test_bad_requests_are_refused_typed_and_reach_no_engine(change, status, code, field):
    llm = FakeLlm()
    async with client_for(llm) as client:
        answer = await client.post("/v1/chat/completions", json={**body(), **change})
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["code"] == code and error["field"] == field and error["message"]
    assert llm.requests == []


async def test_a_slow_model_answers_504_and_no_model_answers_503():
    async with client_for(FakeLlm(delay=1.0), request_timeout_s=0.2) as client:
        slow = await client.post("/v1/chat/completions", json=body())
    assert slow.status_code == 504 and slow.json()["error"]["code"] == "llm_timeout"
    async with client_for(None) as client:
        assert (await client.get("/v1/models")).json()["data"] == []
        none = await client.post("/v1/chat/completions", json=body())
    assert (
        none.status_code == 503 and none.json()["error"]["code"] == "llm_unavailable" and "retry-after" in none.headers
    )
