"""Cockpit turns over the WebSocket on the real Serve app: slot and confirmation questions are clarifications,
plugin results are execution.result, a workflow shows in the turn; the local token-less mode; the protocol document."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support.ws_client import Conversation, types


@pytest.fixture
def conv(serve_app):
    c = Conversation(serve_app["url"], query=f"?user_id=ws-cockpit-{uuid.uuid4().hex[:8]}", headers={})
    yield c
    c.close()


def answer(conv: Conversation, question: dict, text: str) -> list[dict]:
    return conv.turn(
        "dialogue.answer",
        {
            "client_message_id": uuid.uuid4().hex,
            "reply_to_question_id": question["payload"]["question_id"],
            "raw_content": text,
        },
    )


def test_a_missing_slot_is_a_clarification_and_the_plugin_result_an_execution_result(conv):
    asked = conv.say("把空调调一下温度")
    assert types(asked) == ["dialogue.clarification"]
    assert asked[0]["payload"]["questions"][0]["field_name"] == "temperature"
    done = answer(conv, asked[0], "二十二度")
    assert types(done) == ["execution.result"]
    assert (
        done[0]["payload"]["result"]["data"]["temperature"] == 22
        and done[0]["payload"]["turn"]["status"] == "completed"
    )
    assert done[0]["payload"]["turn"]["routing_debug"] is not None


def test_a_confirmation_question_and_a_workflow_turn(conv):
    asked = conv.say("取消订单 A12345678")
    assert types(asked) == ["dialogue.clarification"] and asked[0]["payload"]["question_type"] == "confirmation"
    assert types(answer(conv, asked[0], "确认")) == ["execution.result"]
    flow = conv.say("先打开车窗然后把空调调到二十四度")
    assert types(flow) == ["execution.result"]
    steps = flow[0]["payload"]["turn"]["workflow"]["steps"]
    assert [s["intent_id"] for s in steps] == ["cabin_window_open", "cabin_set_ac"]
    assert all(s["status"] == "done" for s in steps)


def test_the_protocol_document_is_served_next_to_the_openapi(serve_app):
    doc = httpx.get(serve_app["url"] + "/asyncapi.json", timeout=10).json()
    assert doc["asyncapi"].startswith("3.") and "dialogue_input" in doc["components"]["messages"]


def test_a_request_partly_outside_the_catalog_names_what_is_not_done_on_both_transports(serve_app, conv):
    """The partial-request rule (engine/partial.py) on the served app: the navigation runs, the reply names the boot,
    and `not_done` lists it — in the HTTP turn response and on the WebSocket's result."""
    text = "帮我把后备箱打开然后导航去最近的充电站"
    with httpx.Client(base_url=serve_app["url"], timeout=10.0) as http:
        body = http.post("/api/v1/agent/chat", json={"user_id": f"partial-{uuid.uuid4().hex[:8]}", "text": text}).json()
    assert body["status"] == "completed" and body["intent"] == "cabin_nav_to", body
    assert body["reply"].endswith("打开后备箱我还做不到。")
    assert body["not_done"] == [{"text": "帮我把后备箱打开", "reason": "outside_catalog"}]
    done = conv.say(text)  # the planner ran: a processing notice, then the result
    assert types(done)[-1] == "execution.result" and "dialogue.clarification" not in types(done)
    assert done[-1]["payload"]["reply"].endswith("打开后备箱我还做不到。")
    assert done[-1]["payload"]["turn"]["not_done"] == [{"text": "帮我把后备箱打开", "reason": "outside_catalog"}]
