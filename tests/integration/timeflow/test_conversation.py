"""The WebSocket conversation on the served timeflow pack: a real client, the real Serve app and PostgreSQL.

Every write goes decision -> processing -> confirmation -> decide -> applied, and shows in the REST views exactly
once; replays run nothing; bad frames are answered typed on a connection that stays usable."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from websockets.exceptions import ConnectionClosed

from benchmarks.media_samples import speak
from tests.support.serving import PINNED_NOW
from tests.support.ws_client import Conversation, types

TZ = ZoneInfo("Asia/Shanghai")


@pytest.fixture(scope="module")
def app(switch_pack, timeflow, served):
    with switch_pack("timeflow") as client:
        yield {"client": client, "url": served.url}


@pytest.fixture
def user(app):
    client = app["client"]
    resp = client.post(
        "/api/v1/auth/register", json={"email": f"{uuid.uuid4().hex[:12]}@example.com", "password": "long enough pw"}
    )
    assert resp.status_code == 201, resp.text
    body = resp.json()
    headers = {"Authorization": f"Bearer {body['access_token']}"}
    return {"token": body["access_token"], "headers": headers, "id": body["user_id"]}


@pytest.fixture
def conv(app, user):
    c = Conversation(app["url"], user["token"])
    yield c
    c.close()


def timeline(app, user, day_offset: int = 1) -> list[dict]:
    """The items of the day `day_offset` days from the app's (pinned) today."""
    start = PINNED_NOW.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=day_offset)
    resp = app["client"].get(
        "/api/v1/items/timeline",
        headers=user["headers"],
        params={"start_at": start.isoformat(), "end_at": (start + timedelta(days=1)).isoformat()},
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


def local_hm(value: str) -> str:
    """An item time as the user reads it: hours and minutes in their time zone."""
    return datetime.fromisoformat(value).astimezone(TZ).strftime("%H:%M")


def messages(app, user) -> list[dict]:
    return (
        app["client"]
        .get("/api/v1/conversation/messages", headers=user["headers"], params={"limit": 100})
        .json()["messages"]
    )


def create(conv: Conversation, text: str) -> tuple[list[dict], dict]:
    events = conv.say(text)
    assert types(events) == ["dialogue.decision", "execution.processing", "write.confirmation_required"], events
    applied = conv.decide(events[-1])
    assert types(applied) == ["write.applied"], applied
    return events, applied[0]


def test_a_schedule_said_in_text_is_confirmed_applied_once_and_replays_identically(app, user, conv):
    cmid = uuid.uuid4().hex
    events = conv.say("明天下午三点提醒我去牙医复诊", cmid)
    assert types(events) == ["dialogue.decision", "execution.processing", "write.confirmation_required"]
    decision, confirmation = events[0]["payload"], events[-1]["payload"]
    assert (decision["target_agent_name"], decision["target_function_name"]) == ("schedule_todo_agent", "create")
    assert "牙医复诊" in confirmation["preview_text"] and confirmation["turn"]["timings"]["total_ms"] > 0
    assert timeline(app, user) == []  # nothing written before the decision
    key = uuid.uuid4().hex
    applied = conv.decide(events[-1], key=key)
    assert types(applied) == ["write.applied"]
    items = timeline(app, user)
    assert [(i["title"], local_hm(i["start_at"])) for i in items] == [("去牙医复诊", "15:00")]
    assert applied[0]["payload"]["applied_target_id"] == items[0]["id"]
    again = conv.decide(events[-1], key=key)
    assert again[0]["payload"] == applied[0]["payload"]
    replayed = conv.say("明天下午三点提醒我去牙医复诊", cmid)
    assert [e["payload"] for e in replayed] == [e["payload"] for e in events]  # the stored events; nothing ran
    assert len(timeline(app, user)) == 1
    kinds = [m["metadata"]["message_kind"] for m in messages(app, user)]
    assert kinds == ["input", "decision", "execution_processing", "confirmation_request", "confirmation_decision"]


def test_a_schedule_said_by_voice_goes_through_asr(app, user, conv):
    clip = speak(
        "ming2 tian1 xia4 wu3 san1 dian3 ti2 xing3 wo3 kai1 hui4", voice="cmn-latn-pinyin", words_per_minute=110
    )
    media = app["client"].post(
        "/api/v1/media/upload",
        headers=user["headers"],
        data={"file_type": "audio"},
        files={"file": ("voice.wav", clip)},
    )
    assert media.status_code in (200, 201), media.text
    events = conv.turn(
        "dialogue.input",
        {"client_message_id": uuid.uuid4().hex, "modality": "voice_asr", "source_url": media.json()["source_url"]},
        timeout=30,
    )
    said = [m for m in messages(app, user) if m["role"] == "user"][-1]
    assert said["modality"] == "voice_asr" and said["source_url"] == media.json()["source_url"] and said["raw_content"]
    assert types(events) == ["dialogue.decision", "execution.processing", "write.confirmation_required"], (
        said["raw_content"],
        events,
    )
    assert types(conv.decide(events[-1])) == ["write.applied"]
    assert len(timeline(app, user)) == 1


def test_a_missing_time_is_asked_then_answered(app, user, conv):
    asked = conv.say("提醒我交房租")
    assert types(asked) == ["dialogue.clarification"]
    question = asked[0]["payload"]
    assert question["mode"] == "single" and question["questions"][0]["field_name"] == "when"
    bad = conv.turn(
        "dialogue.answer",
        {
            "client_message_id": uuid.uuid4().hex,
            "reply_to_question_id": question["question_id"],
            "raw_content": "随便吧",
        },
    )
    assert types(bad) == ["dialogue.clarification"] and bad[0]["payload"]["reason"] == "invalid_answer"
    events = conv.turn(
        "dialogue.answer",
        {
            "client_message_id": uuid.uuid4().hex,
            "reply_to_question_id": bad[0]["payload"]["question_id"],
            "raw_content": "明天上午十点",
        },
    )
    assert types(events) == ["dialogue.decision", "execution.processing", "write.confirmation_required"], events
    assert types(conv.decide(events[-1])) == ["write.applied"]
    assert [local_hm(i["start_at"]) for i in timeline(app, user)] == ["10:00"]


def test_an_unknown_question_id_is_a_new_input(conv):
    events = conv.turn(
        "dialogue.answer",
        {
            "client_message_id": uuid.uuid4().hex,
            "reply_to_question_id": str(uuid.uuid4()),
            "raw_content": "明天晚上八点提醒我给妈妈打电话",
        },
    )
    assert types(events) == ["dialogue.decision", "execution.processing", "write.confirmation_required"]


def test_a_long_task_split_asks_once_then_applies_goal_subtasks_and_profile_together(app, user, conv):
    asked = conv.say("我想学会弹吉他，帮我拆成小目标")
    assert types(asked) == ["dialogue.clarification"]
    question = asked[0]["payload"]
    fields = [q["field_name"] for q in question["questions"]]
    assert question["mode"] == "batch" and {"deadline", "weekly_hours"} <= set(fields)
    logged = messages(app, user)
    assert [m["metadata"]["message_kind"] for m in logged] == ["input", "clarification_question"]
    assert logged[-1]["id"] == question["question_id"] and logged[-1]["metadata"]["question_type"] == "long_task_split"
    answers = {
        "deadline": "三个月内",
        "weekly_hours": "每周五个小时",
        "goal_title": "学会弹吉他",
        "current_level": "零基础",
    }
    events = conv.turn(
        "dialogue.answer",
        {
            "client_message_id": uuid.uuid4().hex,
            "reply_to_question_id": question["question_id"],
            "answers": {f: answers[f] for f in fields},
        },
    )
    assert types(events) == ["dialogue.decision", "execution.processing", "write.confirmation_required"], events
    applied = conv.decide(events[-1])
    goal_id = applied[0]["payload"]["applied_target_id"]
    detail = app["client"].get(f"/api/v1/long-goals/{goal_id}", headers=user["headers"]).json()
    assert detail["goal"]["plan_overview"] and detail["subtasks"] and detail["task_profile"]["profile_summary"]
    assert detail["goal"]["title"] == "学会弹吉他"
    kinds = [m["metadata"]["message_kind"] for m in messages(app, user)]
    assert kinds == [
        "input",
        "clarification_question",
        "clarification_answer",
        "decision",
        "execution_processing",
        "confirmation_request",
        "confirmation_decision",
    ]
    assert (
        app["client"].get("/api/v1/conversation/snapshot", headers=user["headers"]).json()["pending_clarification"]
        is None
    )


def test_two_matching_items_ask_which_and_only_the_chosen_one_changes(app, user, conv):
    create(conv, "明天上午九点提醒我开组会")
    create(conv, "明天下午四点提醒我开组会")
    cancelled = conv.say("把明天的组会删掉")
    assert types(cancelled[-1:]) == ["selection.required"]
    assert types(conv.turn("selection.cancel", {"interaction_id": cancelled[-1]["payload"]["interaction_id"]})) == [
        "execution.result"
    ]
    assert len(timeline(app, user)) == 2
    events = conv.say("把明天的组会改到后天上午十点")
    selection = events[-1]["payload"]
    assert len(selection["candidates"]) == 2
    morning = next(c for c in selection["candidates"] if local_hm(c["start_at"]) == "09:00")
    wrong = conv.turn(
        "selection.submit",
        {"interaction_id": selection["interaction_id"], "selected_candidate_ids": [str(uuid.uuid4())]},
    )
    assert types(wrong) == ["execution.error"] and wrong[0]["payload"]["field"] == "payload.selected_candidate_ids"
    chosen = conv.turn(
        "selection.submit", {"interaction_id": selection["interaction_id"], "selected_candidate_ids": [morning["id"]]}
    )
    assert types(chosen) == ["execution.processing", "write.confirmation_required"], chosen
    assert types(conv.decide(chosen[-1])) == ["write.applied"]
    assert [local_hm(i["start_at"]) for i in timeline(app, user, 1)] == ["16:00"]
    assert [(i["id"], local_hm(i["start_at"])) for i in timeline(app, user, 2)] == [(morning["id"], "10:00")]


def test_feedback_then_replan_then_review_over_real_rows(app, user, conv):
    create(conv, "今天晚上十一点提醒我健身")
    feedback = conv.say("今天的健身没完成")
    assert types(feedback) == ["dialogue.decision", "execution.processing", "write.confirmation_required"], feedback
    assert feedback[0]["payload"]["target_agent_name"] == "feedback_agent"
    assert types(conv.decide(feedback[-1])) == ["write.applied"]
    replan = conv.say("帮我把没完成的重新安排一下")
    assert replan[0]["payload"]["target_agent_name"] == "replan_agent"
    assert types(replan[-1:]) == ["write.confirmation_required"], replan
    assert types(conv.decide(replan[-1])) == ["write.applied"]
    assert [i["title"] for i in timeline(app, user, 1)] == ["健身"]  # moved to tomorrow
    review = conv.say("帮我复盘一下这周")
    assert review[0]["payload"]["target_agent_name"] == "review_agent"
    assert types(review[-1:]) == ["execution.result"] and "健身" in review[-1]["payload"]["reply"]


def test_a_dropped_connection_loses_nothing_and_the_snapshot_matches_the_database(app, user):
    first = Conversation(app["url"], user["token"])
    first.say("后天早上八点提醒我晨跑")
    seen = messages(app, user)[-1]["id"]
    first.send(
        "dialogue.input",
        {"client_message_id": uuid.uuid4().hex, "modality": "text", "raw_content": "后天晚上七点提醒我看电影"},
    )
    first.ws.close()  # mid-turn
    second = Conversation(app["url"], user["token"])
    for _ in range(50):
        second.send("transport.resume", {"last_seen_message_id": seen})
        snapshot = json.loads(second.ws.recv(timeout=10))
        if snapshot["payload"].get("code") == "rate_limited":  # resumes are limited per user: wait as told
            time.sleep(snapshot["payload"]["retry_after_s"])
            continue
        if (
            snapshot["payload"]["last_event"]
            and snapshot["payload"]["last_event"]["type"] == "write.confirmation_required"
            and len(snapshot["payload"]["messages"]) >= 4
        ):
            break
    stored = messages(app, user)
    after = [m["id"] for m in stored][[m["id"] for m in stored].index(seen) + 1 :]
    assert snapshot["type"] == "transport.snapshot" and snapshot["payload"]["found_last_seen"]
    assert [m["id"] for m in snapshot["payload"]["messages"]] == after
    assert [m["metadata"]["message_kind"] for m in snapshot["payload"]["messages"]] == [
        "input",
        "decision",
        "execution_processing",
        "confirmation_request",
    ]
    second.close()


def test_bad_frames_are_answered_typed_and_write_nothing(app, user, conv):
    before = len(messages(app, user))
    bad = [
        b"\x00binary",
        "{not json",
        json.dumps({"type": "dialogue.shout", "payload": {}}),
        json.dumps({"type": "dialogue.input", "payload": {"modality": "text", "raw_content": "你好"}}),
        "[" * 60000,  # nesting refused before it is parsed (an oversize frame closes the connection: tests/security)
        json.dumps(
            {
                "type": "write.decide",
                "payload": {"write_request_id": str(uuid.uuid4()), "decision": "confirmed", "idempotency_key": "k"},
            }
        ),
    ]
    codes = []
    for frame in bad:
        conv.ws.send(frame)
        event = json.loads(conv.ws.recv(timeout=10))
        assert event["type"] in ("dialogue.error", "execution.error") and event["payload"]["message"]
        codes.append(event["payload"]["code"])
    assert codes == ["binary_frame", "invalid_json", "unknown_type", "missing_field", "json_too_deep", "not_found"]
    assert len(messages(app, user)) == before
    conv.send("transport.ping", {"nonce": "n1"})
    assert json.loads(conv.ws.recv(timeout=10))["payload"]["nonce"] == "n1"  # still open and answering


def test_another_users_write_request_is_not_found(app, user, conv):
    events = conv.say("明天中午十二点提醒我取快递")
    other = Conversation(app["url"], query=f"?user_id=someone-{uuid.uuid4().hex[:6]}", headers={})
    refused = other.decide(events[-1])
    assert types(refused) == ["execution.error"] and refused[0]["payload"]["code"] == "not_found"
    other.close()
    assert timeline(app, user) == []


def test_without_a_valid_token_the_socket_closes_unauthorized(app, user):
    for query, headers in (("", {}), ("?access_token=not-a-token", {}), ("", {"Authorization": "Bearer nope"})):
        c = Conversation(app["url"], query=query, headers=headers)
        with pytest.raises(ConnectionClosed) as closed:
            c.ws.recv(timeout=10)
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1008, "unauthorized")
    ok = Conversation(app["url"], query=f"?access_token={user['token']}", headers={})
    ok.send("transport.ping", {})
    assert json.loads(ok.ws.recv(timeout=10))["type"] == "transport.pong"
    ok.close()


def test_a_rejected_write_changes_nothing_and_cannot_be_confirmed_after(app, user, conv):
    events = conv.say("明天晚上九点提醒我倒垃圾")
    rejected = conv.decide(events[-1], "rejected")
    assert types(rejected) == ["execution.result"] and rejected[0]["payload"]["result"]["status"] == "rejected"
    late = conv.decide(events[-1], "confirmed")
    assert types(late) == ["execution.error"] and late[0]["payload"]["code"] == "already_decided"
    assert timeline(app, user) == []
    assert [m["metadata"].get("decision") for m in messages(app, user)][-1] == "rejected"
