"""A generated reply streams on POST /api/v1/agent/chat-stream as `delta` events, clause by clause, each sent only once
it passed the checks; the final response's reply is the deltas joined. The engine runs in process (fake NLU models);
the social backend is the real client over a loopback OpenAI-wire server that streams."""

from __future__ import annotations

import asyncio
import json

from pydantic import SecretStr

from config.llm import LlmBackend
from engine.llm.responder import ReplyBackend, SocialResponder
from serve_app.llm_backends.openai_lm import OpenAiLanguageModel
from tests.engine.test_cloud_layer import cloud_settings
from tests.serve_app.http.test_chat_stream import client
from tests.support.fakes import FakeModelClient, Rig
from tests.support.openai_server import OpenAiWire, Script
from tests.support.packs import untimed

ANXIOUS = "我好焦虑"


async def stream_turn(script: Script, *, timeout_s: float = 5.0) -> tuple[list[dict], OpenAiWire]:
    wire = await OpenAiWire(script=script).start()
    try:
        lm = OpenAiLanguageModel("qwen", LlmBackend(base_url=wire.base_url, model="m"), SecretStr("k"))
        writer = SocialResponder([ReplyBackend("qwen", lm, timeout_s=timeout_s)], budget_s=0.3, extra_ms=2400.0)
        # the NLU stages untimed: a stage late on a busy machine answers `fallback` before any writer is asked; the
        # writer's own budgets (above) are what these tests time
        settings = untimed(cloud_settings(planner=[], social=["qwen"]))
        r = Rig(models=FakeModelClient(), settings=settings, replies=writer)
        async with client(r) as c:
            resp = await c.post("/api/v1/agent/chat-stream", json={"user_id": "u1", "text": ANXIOUS}, timeout=10)
        assert resp.status_code == 200
        events = [json.loads(line) for line in resp.text.splitlines()]
        await asyncio.sleep(0.1)  # let the server see a closed connection, if any
        return events, wire
    finally:
        await wire.stop()


async def test_the_reply_streams_clause_by_clause_and_the_final_reply_is_the_deltas_joined():
    events, wire = await stream_turn(Script(text="听起来你压力不小，焦虑很正常。先深呼吸一下吧！", stream_delay=0.01))
    deltas = [e["text"] for e in events if e["event"] == "delta"]
    assert deltas == ["听起来你压力不小，", "焦虑很正常。", "先深呼吸一下吧！"]
    final = events[-1]
    assert [e["event"] for e in events] == ["delta", "delta", "delta", "final"]
    assert final["response"]["reply"] == "".join(deltas) and final["response"]["status"] == "social"
    assert final["response"]["routing_debug"]["replies"] == [
        {"purpose": "social", "backend": "qwen", "outcome": "generated", "reason": ""}
    ]
    assert wire.requests[0]["stream"] is True and wire.closed_early == 0


async def test_a_clause_that_claims_an_action_is_never_sent_and_ends_the_reply_there():
    events, wire = await stream_turn(Script(text="别担心，我已经帮你安排好了。明天会更好。", stream_delay=0.01))
    deltas = [e["text"] for e in events if e["event"] == "delta"]
    assert deltas == ["别担心，"] and events[-1]["response"]["reply"] == "别担心，"
    assert events[-1]["response"]["routing_debug"]["replies"][0]["reason"] == "cut: too long or claims an action"
    assert "安排" not in json.dumps(events, ensure_ascii=False)


async def test_a_first_clause_that_fails_the_checks_gives_the_template():
    events, _ = await stream_turn(Script(text="已经帮你打开车窗了，放心吧。", stream_delay=0.01))
    assert [e["event"] for e in events] == ["final"] and events[0]["response"]["status"] == "rejected"
    assert events[0]["response"]["routing_debug"]["replies"][0]["outcome"] == "refused"


async def test_the_deadline_cuts_the_stream_keeps_what_was_said_and_closes_the_connection():
    text = "慢慢来，" + "一切都会好起来的" * 10
    events, wire = await stream_turn(Script(text=text, stream_delay=0.05), timeout_s=0.6)
    deltas = [e["text"] for e in events if e["event"] == "delta"]
    final = events[-1]["response"]
    assert deltas == ["慢慢来，"] and final["reply"] == "慢慢来，" and final["status"] == "social"
    assert final["routing_debug"]["replies"][0]["reason"] == "cut: deadline"
    assert wire.closed_early == 1, "the server saw the client close the stream"
