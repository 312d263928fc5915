"""The demo page in headless Chromium against the served app, pack `timeflow` (the session's app switched to it, as
for the WebSocket conversation tests): writes confirmed and rejected through the confirmation card and seen in the
REST timeline, a clarification and a batch clarification answered through their cards, a selection made through its
card, and a connection dropped mid-turn that resumes with the snapshot and its card. Each test saves a screenshot."""

from __future__ import annotations

import json
import uuid

import pytest
from playwright.sync_api import WebSocketRoute, expect

from tests.integration.timeflow.test_conversation import (  # the same REST timeline, read as the user reads it
    local_hm,
    timeline,
)
from tests.support.demo_page import PHONE, DemoPage
from tests.support.ws_client import Conversation, types

PACK = "timeflow"


@pytest.fixture(scope="module")
def app(switch_pack, timeflow, served):
    with switch_pack(PACK) as client:
        yield {"client": client, "url": served.url}


@pytest.fixture
def user(app):
    resp = app["client"].post(
        "/api/v1/auth/register", json={"email": f"{uuid.uuid4().hex[:12]}@example.com", "password": "long enough pw"}
    )
    assert resp.status_code == 201, resp.text
    token = resp.json()["access_token"]
    return {"token": token, "headers": {"Authorization": f"Bearer {token}"}}


@pytest.fixture
def demo(browser, app, user, tmp_path):
    page = DemoPage(browser, app["url"], tmp_path, token=user["token"])
    yield page
    page.close()


def confirm(demo: DemoPage, card) -> None:
    """Confirm with the keyboard: focus the card's Confirm button and press Enter."""
    card.locator("[data-decision=confirmed]").focus()
    demo.page.keyboard.press("Enter")
    demo.wait_answered()
    expect(demo.last_bot().locator(".reply.applied")).to_be_visible()


def test_a_write_confirmed_through_its_card_is_applied(demo, app, user):
    demo.say("明天下午三点提醒我去牙医复诊")
    card = demo.card("confirmation")
    expect(card.locator(".preview")).to_contain_text("牙医复诊")
    expect(demo.last_bot()).to_have_attribute(
        "data-events", "dialogue.decision execution.processing write.confirmation_required"
    )
    assert timeline(app, user) == []  # nothing written before the decision
    demo.screenshot("timeflow-confirmation")
    confirm(demo, card)
    expect(card.locator("button")).to_have_count(2)
    assert all(card.locator("button").nth(i).is_disabled() for i in range(2))  # a card answers once
    items = timeline(app, user)
    assert [(i["title"], local_hm(i["start_at"])) for i in items] == [("去牙医复诊", "15:00")]
    assert demo.last_bot().locator(".reply.applied").get_attribute("data-applied") == items[0]["id"]
    demo.screenshot("timeflow-applied")


def test_a_write_rejected_through_its_card_changes_nothing(demo, app, user):
    demo.say("明天晚上九点提醒我倒垃圾")
    demo.card("confirmation").locator("[data-decision=rejected]").click()
    demo.wait_answered()
    expect(demo.last_bot().locator(".reply")).to_contain_text("没有保存")
    assert timeline(app, user) == []


def test_a_clarification_is_answered_through_its_card_at_phone_width(browser, app, user, tmp_path):
    demo = DemoPage(browser, app["url"], tmp_path, viewport=PHONE, token=user["token"])
    try:
        demo.say("提醒我交房租")
        field = demo.card("clarification").locator("input[name=when]")
        expect(field).to_be_visible()
        field.fill("明天上午十点")
        field.press("Enter")  # submits the card
        demo.wait_answered()
        confirmation = demo.card("confirmation")
        expect(confirmation.locator(".preview")).to_contain_text("明天 10:00")
        assert demo.page_width() <= PHONE["width"]
        demo.screenshot("timeflow-clarification-phone")
        confirm(demo, confirmation)
        assert [local_hm(i["start_at"]) for i in timeline(app, user)] == ["10:00"]
    finally:
        demo.close()


def test_a_batch_clarification_is_answered_in_one_card(demo, app, user):
    demo.say("我想学会弹吉他，帮我拆成小目标")
    card = demo.card("clarification")
    expect(card.locator(".card-title")).to_contain_text("answered together")
    answers = {
        "deadline": "三个月内",
        "weekly_hours": "每周五个小时",
        "goal_title": "学会弹吉他",
        "current_level": "零基础",
    }
    names = [card.locator("input").nth(i).get_attribute("name") for i in range(card.locator("input").count())]
    assert {"deadline", "weekly_hours"} <= set(names)
    for name in names:
        card.locator(f"input[name={name}]").fill(answers[name])
    card.locator("button[type=submit]").click()
    demo.wait_answered()
    confirmation = demo.card("confirmation")
    demo.screenshot("timeflow-batch")
    confirm(demo, confirmation)
    goal_id = demo.last_bot().locator(".reply.applied").get_attribute("data-applied")
    detail = app["client"].get(f"/api/v1/long-goals/{goal_id}", headers=user["headers"]).json()
    assert detail["goal"]["title"] == "学会弹吉他" and detail["subtasks"]


def test_a_selection_is_made_through_its_card(demo, app, user):
    setup = Conversation(app["url"], user["token"])  # two items of the same name, made over the socket directly
    for text in ("明天上午九点提醒我开组会", "明天下午四点提醒我开组会"):
        assert types(setup.decide(setup.say(text)[-1])) == ["write.applied"]
    setup.close()
    morning = next(i for i in timeline(app, user) if local_hm(i["start_at"]) == "09:00")
    demo.say("把明天的组会改到后天上午十点")
    card = demo.card("selection")
    expect(card.locator("input[type=radio]")).to_have_count(2)
    card.locator(f"input[value='{morning['id']}']").check()
    demo.screenshot("timeflow-selection")
    card.locator("button[type=submit]").click()
    demo.wait_answered()
    confirm(demo, demo.card("confirmation"))
    assert [local_hm(i["start_at"]) for i in timeline(app, user, 1)] == ["16:00"]
    assert [(i["id"], local_hm(i["start_at"])) for i in timeline(app, user, 2)] == [(morning["id"], "10:00")]


def test_a_connection_dropped_mid_turn_resumes_with_the_snapshot_and_its_card(demo, app, user):
    demo.say("后天早上八点提醒我晨跑")
    # send, then drop the socket before any event can arrive
    demo.page.evaluate("""() => {
        document.querySelector('#message').value = '后天晚上七点提醒我看电影';
        document.querySelector('#composer').requestSubmit();
        window.batonDemo.conn.drop();
    }""")
    expect(demo.page.locator("#connection")).to_have_attribute("data-state", "closed")
    demo.wait_connected()
    snapshot = demo.page.locator(".msg.snapshot").first
    expect(snapshot).to_have_attribute("data-found", "true")  # resumed after the last message the page had seen
    # the frame either ran before the resume (its card is the snapshot's last event) or is sent again with its
    # client_message_id (the server replays it if it ran meanwhile): one card either way, and the text logged once
    card = demo.page.locator("[data-card=confirmation]").filter(has_text="看电影")
    expect(card).to_have_count(1)
    demo.screenshot("timeflow-resumed")
    card.locator("[data-decision=confirmed]").click()
    demo.wait_answered()
    expect(demo.last_bot().locator(".reply.applied")).to_be_visible()
    assert [i["title"] for i in timeline(app, user, 2)] == [
        "看电影"
    ]  # 晨跑 still waits for its confirmation (or answer)
    logged = messages(app, user)
    assert [m["raw_content"] for m in logged if m["role"] == "user"] == [
        "后天早上八点提醒我晨跑",
        "后天晚上七点提醒我看电影",
    ]
    listed = snapshot.locator(".snapshot-messages li").evaluate_all("els => els.map(e => e.dataset.id)")
    ids = [m["id"] for m in logged]
    if listed:  # what was logged after the last message the page knew, in order (nothing, if the resume came first)
        assert listed == ids[ids.index(listed[0]) : ids.index(listed[0]) + len(listed)]


def messages(app, user) -> list[dict]:
    return (
        app["client"]
        .get("/api/v1/conversation/messages", headers=user["headers"], params={"limit": 100})
        .json()["messages"]
    )


def test_a_frame_lost_with_the_connection_is_sent_again_after_the_snapshot_and_runs_once(browser, app, user, tmp_path):
    """The network drops the socket as a frame leaves the page, before the server has it (the routed socket closes
    instead of passing it on): the snapshot does not show it, so the page sends it again with its client_message_id."""
    lost: list[str] = []

    def network(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str) -> None:
            if "看电影" in message and not lost:
                lost.append(message)
                ws.close(code=4001, reason="network")
                server.close()
            else:
                server.send(message)

        ws.on_message(from_page)

    demo = DemoPage(browser, app["url"], tmp_path, token=user["token"], route_socket=network)
    try:
        demo.say("后天早上八点提醒我晨跑")
        demo.page.locator("#message").fill("后天晚上七点提醒我看电影")
        demo.page.locator("#message").press("Enter")
        expect(demo.page.locator(".msg.snapshot")).to_have_count(1)
        resent = demo.page.locator(".msg.bot").filter(has_text="not in the snapshot: sent again")
        card = resent.locator("[data-card=confirmation]")
        expect(card.locator(".preview")).to_contain_text("看电影")
        assert json.loads(lost[0])["payload"]["raw_content"] == "后天晚上七点提醒我看电影"
        demo.screenshot("timeflow-resent")
        confirm(demo, card)
        assert [i["title"] for i in timeline(app, user, 2)] == ["看电影"]
        said = [m["raw_content"] for m in messages(app, user) if m["role"] == "user"]
        assert said == ["后天早上八点提醒我晨跑", "后天晚上七点提醒我看电影"]  # the lost frame ran once
    finally:
        demo.close()
