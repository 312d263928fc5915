"""The timeflow agents over HTTP alone, as over the WebSocket: each write answers `waiting_confirmation` with its
write request and exists only after fill-slots (确认 / 算了) or the write gate's decide; several agents in one message
run in the order said; the same conversation over HTTP and over the WebSocket leaves the same rows."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.support.serving import PINNED_NOW
from tests.support.ws_client import Conversation, types

TZ = ZoneInfo("Asia/Shanghai")


@pytest.fixture(scope="module")
def app(switch_pack, timeflow, served):
    with switch_pack("timeflow") as client:
        yield {"client": client, "url": served.url}


def register(app) -> dict:
    resp = app["client"].post(
        "/api/v1/auth/register", json={"email": f"{uuid.uuid4().hex[:12]}@example.com", "password": "long enough pw"}
    )
    assert resp.status_code == 201, resp.text
    body = resp.json()
    token = body["access_token"]
    return {"token": token, "headers": {"Authorization": f"Bearer {token}"}, "id": body["user_id"]}


@pytest.fixture
def user(app):
    return register(app)


class Http:
    """One user's conversation over POST /api/v1/agent/chat and /fill-slots."""

    def __init__(self, app, user) -> None:
        self.client, self.headers, self.session = app["client"], user["headers"], f"s-{uuid.uuid4().hex[:8]}"
        self.user_id = user["id"]

    def chat(self, text: str) -> dict:
        body = {
            "user_id": self.user_id,
            "session_id": self.session,
            "text": text,
            "client_message_id": uuid.uuid4().hex,
        }
        resp = self.client.post("/api/v1/agent/chat", json=body, headers=self.headers)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def fill(self, text: str | None = None, slots: dict | None = None) -> dict:
        body = {"user_id": self.user_id, "session_id": self.session, "client_message_id": uuid.uuid4().hex}
        body |= {"text": text} if text is not None else {}
        body |= {"slots": slots} if slots is not None else {}
        resp = self.client.post("/api/v1/agent/fill-slots", json=body, headers=self.headers)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def proposed(self, text: str, agent: str | None = None) -> dict:
        """A message that proposes a write: the turn waits for its confirmation. A turn whose model stage missed its
        budget on this busy machine (`timings.degraded`) may understand less, by design: it is said again."""
        for _ in range(3):
            turn = self.chat(text)
            named = turn.get("agent") and turn["agent"]["target_agent_name"]
            if turn["status"] == "waiting_confirmation" and agent in (None, named) or not turn["timings"]["degraded"]:
                break
        assert turn["status"] == "waiting_confirmation", turn
        write = turn["agent"]["write_request"]
        assert write["preview_text"] and len(write["payload_hash"]) == 64 and write["expires_at"], write
        return turn

    def confirmed(self, text: str) -> dict:
        self.proposed(text)
        done = self.fill("确认")
        assert done["agent"]["status"] == "applied", done
        return done


def timeline(app, user, day_offset: int = 1, days: int = 1) -> list[dict]:
    start = PINNED_NOW.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=day_offset)
    resp = app["client"].get(
        "/api/v1/items/timeline",
        headers=user["headers"],
        params={"start_at": start.isoformat(), "end_at": (start + timedelta(days=days)).isoformat()},
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


def local_hm(value: str) -> str:
    return datetime.fromisoformat(value).astimezone(TZ).strftime("%H:%M")


def test_create_move_finish_replan_and_review_over_http_alone(app, user):
    http = Http(app, user)
    created = http.proposed("明天下午三点提醒我去牙医复诊")
    assert created["agent"]["target_agent_name"] == "schedule_todo_agent" and "牙医复诊" in created["reply"]
    assert timeline(app, user) == []  # nothing before the decision
    assert http.fill("确认")["agent"]["applied"][0]["applied_target_id"]
    assert [(i["title"], local_hm(i["start_at"])) for i in timeline(app, user)] == [("去牙医复诊", "15:00")]

    moved = http.proposed("把明天的牙医复诊改到后天上午十点")
    write = moved["agent"]["write_request"]
    assert timeline(app, user, 2) == []
    decided = app["client"].post(
        f"/api/v1/write-requests/{write['write_request_id']}/decide",
        json={"decision": "confirmed", "idempotency_key": uuid.uuid4().hex, "payload_hash": write["payload_hash"]},
        headers=user["headers"],
    )
    assert decided.status_code == 200 and decided.json()["status"] == "applied", decided.text
    assert timeline(app, user, 1) == []
    assert [(i["title"], local_hm(i["start_at"])) for i in timeline(app, user, 2)] == [("去牙医复诊", "10:00")]

    http.confirmed("今天晚上十一点提醒我健身")
    finished = http.proposed("今天的健身没完成")
    assert finished["agent"]["target_agent_name"] == "feedback_agent"
    assert http.fill("确认")["agent"]["status"] == "applied"

    replan = http.proposed("帮我把没完成的重新安排一下")
    assert replan["agent"]["target_agent_name"] == "replan_agent"

    def workout() -> list[str]:
        return [i["start_at"] for i in timeline(app, user, 0, 2) if i["title"] == "健身"]

    before = workout()
    assert len(before) == 1, timeline(app, user, 0, 2)
    assert http.fill("确认")["agent"]["status"] == "applied"
    assert len(workout()) == 1 and workout() != before  # moved, after the confirmation only

    review = http.chat("帮我复盘一下这周")
    assert review["status"] == "completed" and review["agent"]["target_agent_name"] == "review_agent"
    assert "牙医复诊" in review["reply"]  # over the rows the conversation wrote


def test_a_declined_write_over_fill_slots_writes_nothing(app, user):
    http = Http(app, user)
    http.proposed("明天晚上九点提醒我倒垃圾")
    declined = http.fill("算了")
    assert declined["status"] == "rejected" and declined["agent"]["status"] == "rejected"
    assert timeline(app, user) == []


def test_a_missing_time_is_asked_and_answered_over_http(app, user):
    http = Http(app, user)
    asked = http.chat("提醒我交房租")
    question = asked["agent"]["clarification"]
    assert asked["agent"]["status"] == "waiting_clarification" and question["mode"] == "single"
    assert question["questions"][0]["field_name"] == "when"
    answered = http.fill("明天上午十点")
    assert answered["status"] == "waiting_confirmation", answered
    http.fill("确认")
    assert [local_hm(i["start_at"]) for i in timeline(app, user)] == ["10:00"]


def test_a_long_goal_is_split_after_a_batch_of_questions_over_http(app, user):
    http = Http(app, user)
    asked = http.chat("我想学会弹吉他，帮我拆成小目标")
    question = asked["agent"]["clarification"]
    assert question["mode"] == "batch" and question["question_type"] == "long_task_split", asked
    answers = {
        "deadline": "三个月内",
        "weekly_hours": "每周五个小时",
        "goal_title": "学会弹吉他",
        "current_level": "零基础",
    }
    fields = [q["field_name"] for q in question["questions"]]
    proposed = http.fill(slots={f: answers[f] for f in fields})
    assert proposed["status"] == "waiting_confirmation", proposed
    goals = app["client"].get("/api/v1/long-goals", headers=user["headers"]).json()["goals"]
    assert goals == []
    http.fill("确认")
    goals = app["client"].get("/api/v1/long-goals", headers=user["headers"]).json()["goals"]
    assert [g["title"] for g in goals] == ["学会弹吉他"]


def test_two_matching_items_are_a_selection_over_http_and_only_the_chosen_one_goes(app, user):
    http = Http(app, user)
    http.confirmed("明天上午九点提醒我开组会")
    http.confirmed("明天下午四点提醒我开组会")
    missing = http.chat("把后天的看电影删掉")
    assert missing["agent"]["status"] == "not_found" and missing["agent"]["write_request"] is None
    asked = http.chat("把明天的组会删掉")
    selection = asked["agent"]["selection"]
    assert asked["status"] == "clarify" and asked["agent"]["status"] == "waiting_selection", asked
    assert len(selection["candidates"]) == 2
    morning = next(c for c in selection["candidates"] if local_hm(c["start_at"]) == "09:00")
    chosen = http.fill(slots={"selected_candidate_ids": [morning["id"]]})
    assert chosen["status"] == "waiting_confirmation", chosen
    assert len(timeline(app, user)) == 2
    http.fill("确认")
    assert [local_hm(i["start_at"]) for i in timeline(app, user)] == ["16:00"]


TWO_AGENTS = "跑步完成了，然后帮我复盘这周"


def run_status(app, user) -> str:
    """The status of today's 跑步 (a finished feedback completes it)."""
    return next(i["status"] for i in timeline(app, user, 0) if i["title"] == "跑步")


def test_two_agents_in_one_message_run_in_order_over_http(app, user):
    http = Http(app, user)
    http.confirmed("今天晚上八点提醒我跑步")
    first = http.proposed(TWO_AGENTS, "feedback_agent")
    assert first["agent"]["target_agent_name"] == "feedback_agent"
    assert run_status(app, user) == "planned"  # the feedback waits for its confirmation
    done = http.fill("确认")
    assert run_status(app, user) == "completed"
    agent = done["agent"]
    assert [(s["agent_name"], s["status"]) for s in agent["steps"]] == [
        ("feedback_agent", "applied"),
        ("review_agent", "completed"),
    ], done
    assert agent["applied"] and "跑步" in agent["results"][0]  # the review ran after the feedback was recorded
    assert done["reply"].startswith("这条消息共 2 步") and "复盘：已完成" in done["reply"]


def say(conv: Conversation, text: str) -> list[dict]:
    """A message that proposes a write, said again when its turn ran out of budget or a model stage missed its
    budget (`timings.degraded`: on this busy machine the turn may understand less, by design)."""
    for _ in range(3):
        events = conv.say(text)
        last = events[-1]["payload"]
        if last.get("retry_after_s") is not None:
            time.sleep(last["retry_after_s"])
        elif events[-1]["type"] == "write.confirmation_required" or not last.get("turn", {}).get("timings", {}).get(
            "degraded"
        ):
            break
    return events


def read_until_summary(conv: Conversation) -> list[dict]:
    """A decision's events, then those of the steps it resumed, up to the workflow's summary."""
    events: list[dict] = []
    while not events or "agent_workflow" not in json.dumps(events[-1]["payload"].get("result") or {}):
        events += conv.read_turn()
    return events


def test_two_agents_in_one_message_run_in_order_over_the_websocket(app, user):
    conv = Conversation(app["url"], user["token"])
    try:
        setup = say(conv, "今天晚上八点提醒我跑步")
        assert types(conv.decide(setup[-1])) == ["write.applied"]
        events = say(conv, TWO_AGENTS)
        assert types(events) == ["dialogue.decision", "execution.processing", "write.confirmation_required"], events
        assert events[0]["payload"]["target_agent_name"] == "feedback_agent"
        conv.decide(events[-1], key=uuid.uuid4().hex)
        after = read_until_summary(conv)
        assert [e["type"] for e in after if e["type"] != "execution.processing"] == [
            "execution.result",
            "execution.result",
        ]
        steps = after[-1]["payload"]["result"]["agent_workflow"]
        assert [(s["agent_name"], s["status"]) for s in steps] == [
            ("feedback_agent", "applied"),
            ("review_agent", "completed"),
        ]
    finally:
        conv.close()


def test_a_declined_write_in_the_middle_keeps_the_first_and_says_what_ran(app, user):
    http = Http(app, user)
    http.confirmed("今天晚上八点提醒我跑步")
    first = http.proposed("跑步完成了，然后明天上午九点提醒我开组会，然后帮我复盘这周", "feedback_agent")
    assert first["agent"]["target_agent_name"] == "feedback_agent"
    second = http.fill("确认")
    assert second["status"] == "waiting_confirmation" and second["agent"]["applied"], second
    assert "开组会" in second["agent"]["write_request"]["preview_text"]
    declined = http.fill("算了")
    steps = [(s["agent_name"], s["status"]) for s in declined["agent"]["steps"]]
    assert steps == [("feedback_agent", "applied"), ("schedule_todo_agent", "declined"), ("review_agent", "not_run")]
    assert "前面已完成的步骤保留不变" in declined["reply"]
    assert timeline(app, user) == []  # the declined meeting was never written
    assert run_status(app, user) == "completed"  # the feedback before it stays applied


CONVERSATION = [
    "明天下午三点提醒我去牙医复诊",
    "把明天的牙医复诊改到后天上午十点",
    "今天晚上八点提醒我跑步",
    TWO_AGENTS,
]


def rows(app, user) -> list[tuple]:
    items = timeline(app, user, 0, 7)
    return sorted((i["title"], i["item_type"], i["status"], i["start_at"], i["end_at"]) for i in items)


def test_the_same_conversation_over_http_and_over_the_websocket_leaves_the_same_rows(app):
    over_http, over_ws = register(app), register(app)
    http = Http(app, over_http)
    for text in CONVERSATION:
        http.proposed(text)
        assert http.fill("确认")["agent"]["applied"]
    conv = Conversation(app["url"], over_ws["token"])
    try:
        for text in CONVERSATION:
            events = say(conv, text)
            assert types(events[-1:]) == ["write.confirmation_required"], json.dumps(events, ensure_ascii=False)
            assert types(conv.decide(events[-1])) == ["write.applied"]
        read_until_summary(conv)
    finally:
        conv.close()
    assert rows(app, over_http) == rows(app, over_ws) and len(rows(app, over_http)) >= 2
