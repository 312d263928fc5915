"""Over HTTP: a request said with 安排 and no time is asked for the time (not which of three things), the answer books
it in the user's words, and the item exists only after the confirmation; the write gate's REST decide on a message
of several agents goes on with the steps after it, as fill-slots' 确认 does."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.integration.timeflow.test_agents_over_http import TWO_AGENTS, Http, local_hm, register, run_status, timeline


@pytest.fixture(scope="module")
def app(switch_pack, timeflow, served):
    with switch_pack("timeflow") as client:
        yield {"client": client, "url": served.url}


def said(http: Http, route: str, text: str) -> dict:
    """A turn over `route`, said again after its Retry-After while this busy machine sheds it (503 `overloaded`:
    nothing ran) — as a well-behaved client does."""
    body = {"user_id": http.user_id, "session_id": http.session, "text": text}
    for _ in range(4):
        resp = http.client.post(
            f"/api/v1/agent/{route}", json={**body, "client_message_id": uuid.uuid4().hex}, headers=http.headers
        )
        if resp.status_code != 503:
            break
        time.sleep(float(resp.headers.get("Retry-After", "1")))
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_arranging_a_meeting_without_a_time_asks_the_time_and_books_it_after_the_confirmation(app):
    user = register(app)
    http = Http(app, user)
    asked = said(http, "chat", "帮我安排一个和房东见面的事")
    question = asked["agent"]["clarification"]
    assert asked["agent"]["status"] == "waiting_clarification", asked
    assert question["question_type"] == "normal" and question["questions"][0]["field_name"] == "when", question
    answered = said(http, "fill-slots", "后天上午十点")
    assert answered["status"] == "waiting_confirmation", answered
    assert "和房东见面" in answered["agent"]["write_request"]["preview_text"]
    assert timeline(app, user, 2) == []  # nothing before the confirmation
    assert said(http, "fill-slots", "确认")["agent"]["status"] == "applied"
    assert [(i["title"], local_hm(i["start_at"])) for i in timeline(app, user, 2)] == [("和房东见面", "10:00")]


def test_the_rest_decide_of_a_step_goes_on_with_the_steps_after_it(app):
    user = register(app)
    http = Http(app, user)
    http.confirmed("今天晚上八点提醒我跑步")
    first = http.proposed(TWO_AGENTS, "feedback_agent")
    write = first["agent"]["write_request"]
    decided = app["client"].post(
        f"/api/v1/write-requests/{write['write_request_id']}/decide",
        json={"decision": "confirmed", "idempotency_key": uuid.uuid4().hex, "payload_hash": write["payload_hash"]},
        headers=user["headers"],
    )
    assert decided.status_code == 200 and decided.json()["status"] == "applied", decided.text
    assert run_status(app, user) == "completed"
    said = app["client"].get("/api/v1/conversation/messages", headers=user["headers"], params={"limit": 5})
    replies = [m["raw_content"] for m in said.json()["messages"] if m["role"] == "assistant"]
    summary = next((r for r in replies if r.startswith("这条消息共 2 步")), None)
    assert summary is not None and "复盘：已完成" in summary, replies
