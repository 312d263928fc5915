"""The demo page in headless Chromium against the served app, pack `cockpit` (the session's `serve_app`): a typed
command's reply, status, waterfall and routing; a workflow's steps; a slowed stage drawn degraded; image and voice
turns through the upload; the live panel; labels and a phone-width layout. Each test saves a screenshot."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time

import pytest
from playwright.sync_api import WebSocketRoute, expect

from benchmarks.media_samples import available_fonts, render_text
from engine.plugins import ORDER_STATUSES
from serve_app.ops import launcher
from tests.support.demo_page import PHONE, DemoPage
from tests.support.serving import until_fault_shows

PACK = "cockpit"  # the session app's pack: these tests need no redeploy


@pytest.fixture(scope="module")
def voice_wav(tmp_path_factory):
    """What the fake microphone says: 打开车窗 in espeak-ng's Mandarin, a WAV file Chromium loops as its capture."""
    path = tmp_path_factory.mktemp("voice") / "command.wav"
    subprocess.run(
        ["espeak-ng", "-v", "cmn-latn-pinyin", "-s", "110", "-w", str(path), "da3 kai1 che1 chuang1"],
        check=True,
        timeout=30,
    )
    return path


@pytest.fixture(scope="module")
def chromium_args(voice_wav):
    return [
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-audio-capture={voice_wav}",
    ]


@pytest.fixture
def demo(browser, serve_app, tmp_path):
    page = DemoPage(browser, serve_app["url"], tmp_path)
    yield page
    page.close()


def drawn_rows(demo: DemoPage) -> dict[str, dict]:
    """Each waterfall row as drawn: its bar's left edge and width, and whether it is marked degraded."""
    return demo.page.evaluate("""() => Object.fromEntries(
        [...document.querySelectorAll('#waterfall g.row')].map((g) => {
            const r = g.querySelector('rect');
            return [g.dataset.stage, {
                x: +r.getAttribute('x'), w: +r.getAttribute('width'),
                degraded: g.dataset.degraded === 'true', label: g.querySelector('text').textContent,
            }];
        }))""")


def test_a_typed_command_shows_its_reply_status_waterfall_and_routing(demo):
    demo.say("把空调调到二十二度")
    bot = demo.last_bot()
    expect(bot.locator(".reply")).to_contain_text("22")
    expect(bot.locator(".turn-meta .status")).to_have_attribute("data-status", "completed")
    turn = demo.shown_turn()
    timings = turn["timings"]
    rows = drawn_rows(demo)
    assert {"encoder", "classifier", "retriever", "detector", "fusion", "total"} <= rows.keys()
    assert set(rows) == {*timings["spans_ms"], "total"}  # every span the turn reported, and nothing else
    starts = sorted(timings["spans_ms"], key=lambda s: timings["spans_ms"][s][0])
    assert [rows[s]["x"] for s in starts] == sorted(rows[s]["x"] for s in starts)  # drawn where each stage started
    budget = demo.page.locator("#waterfall line.budget")
    assert float(budget.get_attribute("data-budget")) == timings["budget_ms"] > 0
    end_of_total = rows["total"]["x"] + rows["total"]["w"]
    assert (float(budget.get_attribute("x1")) > end_of_total) == (timings["total_ms"] < timings["budget_ms"])
    expect(demo.page.locator("#waterfall .budget-label")).to_have_text(f"budget {timings['budget_ms']:g} ms")
    assert not any(r["degraded"] for r in rows.values()) and timings["degraded"] == []
    fusion = demo.page.locator("#fusion")
    expect(fusion.locator(".decision")).to_have_text(turn["routing_debug"]["fusion"]["decision"])
    expect(fusion).to_contain_text("cabin_set_ac")
    for stage in ("keyword", "classifier", "retriever", "detector"):
        expect(demo.page.locator(f"#routing tr[data-stage={stage}]")).to_be_visible()
    # the live panel counts the turn: summed over both orchestrator replicas, whichever one answers the poll
    demo.page.wait_for_function("+document.querySelector('#live').dataset.turns >= 1")
    expect(demo.page.locator("#live [data-k=rate]")).not_to_have_text("—")
    expect(demo.page.locator("#live-scope")).to_contain_text("all orchestrator replicas")
    assert demo.unlabelled_controls() == []
    demo.screenshot("cockpit-command")


def first_order_with(status: str) -> str:
    return next(
        oid
        for oid in (f"B{n}" for n in range(1000, 1100))
        if ORDER_STATUSES[int(hashlib.sha256(oid.encode()).hexdigest(), 16) % len(ORDER_STATUSES)] == status
    )


def test_a_workflow_shows_its_steps_in_order_with_status_skip_reason_and_results(demo):
    demo.say("先打开车窗然后把空调调到二十四度")
    steps = demo.page.locator("#steps > li")
    expect(steps).to_have_count(2)
    assert [steps.nth(i).get_attribute("data-intent") for i in range(2)] == ["cabin_window_open", "cabin_set_ac"]
    assert [steps.nth(i).get_attribute("data-status") for i in range(2)] == ["done", "done"]
    expect(steps.nth(1).locator(".result")).to_contain_text("24")
    expect(demo.page.locator("#planner")).to_contain_text("打开车窗")  # the clause analysis
    shipped = first_order_with("shipped")
    demo.say(f"查一下订单{shipped}，如果还没发货就帮我取消")
    steps = demo.page.locator("#steps > li")
    expect(steps).to_have_count(2)
    expect(steps.nth(0)).to_have_attribute("data-status", "done")
    expect(steps.nth(1)).to_have_attribute("data-status", "skipped")
    expect(steps.nth(1).locator(".skip")).to_contain_text("发货")
    expect(steps.nth(1).locator(".cond")).to_contain_text("pending_shipment")
    demo.screenshot("cockpit-workflow")


def test_a_slowed_stage_is_drawn_degraded_inside_the_budget_line(demo, serve_app):
    launcher.set_faults(serve_app["config"], "planner:delay_ms=400")
    try:

        def send() -> dict:
            demo.say("打开车窗然后把空调调到22度")
            return demo.shown_turn()

        turn, _ = until_fault_shows(send, lambda t: "planner" in t["timings"]["degraded"])
    finally:
        launcher.set_faults(serve_app["config"], "")
    assert turn["timings"]["degraded"] == ["planner"]
    rows = drawn_rows(demo)
    assert rows["planner"]["degraded"] and rows["planner"]["label"] == "⚠ planner"
    assert not any(r["degraded"] for stage, r in rows.items() if stage != "planner")
    expect(demo.page.locator("#waterfall .verdict")).to_contain_text("degraded: planner")
    expect(demo.last_bot().locator(".turn-meta .badge.bad")).to_have_text("degraded: planner")
    expect(demo.page.locator("#planner .badge.bad")).to_have_text("degraded")
    expect(demo.page.locator("#live [data-k=degraded]")).to_contain_text("planner")  # the live panel counts it too
    demo.screenshot("cockpit-degraded")
    time.sleep(0.5)  # the faults file is re-read within 0.2 s: the next test's turns run clean


def test_an_image_goes_through_the_upload_to_an_ocr_turn(demo):
    png = render_text("打开车窗", font=available_fonts()[0], size=40)
    demo.page.set_input_files("#image", files=[{"name": "command.png", "mimeType": "image/png", "buffer": png}])
    expect(demo.page.locator(".msg.user.image").last).to_contain_text("command.png")
    demo.wait_answered()
    expect(demo.last_bot().locator(".reply")).to_contain_text("车窗")
    assert "ocr" in demo.shown_turn()["timings"]["spans_ms"] and "ocr" in drawn_rows(demo)
    demo.screenshot("cockpit-image")


def test_a_recorded_voice_message_goes_through_the_upload_to_a_voice_turn(browser, serve_app, tmp_path):
    demo = DemoPage(browser, serve_app["url"], tmp_path, permissions=["microphone"])
    try:
        record = demo.page.locator("#record")
        expect(record).to_be_enabled()
        record.press("Enter")  # keyboard: start
        expect(record).to_have_attribute("aria-pressed", "true")
        time.sleep(2.5)
        record.press("Enter")  # stop: the recording is uploaded, then sent as a voice turn
        expect(demo.page.locator(".msg.user.audio").last).to_contain_text("voice message")
        expect(demo.page.locator("#media-note")).to_contain_text("uploaded audio/")
        demo.wait_answered()
        bot = demo.last_bot()
        # whatever Whisper base makes of espeak-ng's Mandarin, the turn ran ASR and ended typed: a turn (a reply, a
        # question) with its asr span drawn, or a typed refusal of the audio
        if bot.locator(".reply.error").count():
            expect(bot.locator(".reply.error code")).to_have_text("no_speech")
        else:
            expect(bot.locator(".turn-meta .status")).to_be_visible()
            assert "asr" in demo.shown_turn()["timings"]["spans_ms"] and "asr" in drawn_rows(demo)
        demo.screenshot("cockpit-voice")
    finally:
        demo.close()


def test_at_phone_width_nothing_overflows_and_every_control_is_labelled(browser, serve_app, tmp_path):
    demo = DemoPage(browser, serve_app["url"], tmp_path, viewport=PHONE)
    try:
        demo.say("打开车窗然后把空调调到22度")
        expect(demo.page.locator("#steps > li")).to_have_count(2)
        assert demo.page_width() <= PHONE["width"]
        labels = demo.page.locator("#waterfall text.name")
        assert labels.first.bounding_box()["height"] >= 9  # drawn to the phone's width, not shrunk from a desktop's
        assert demo.unlabelled_controls() == []
        demo.screenshot("cockpit-phone")
    finally:
        demo.close()


def test_a_retryable_refusal_is_sent_again_after_its_pause(browser, serve_app, tmp_path):
    """The first time the command leaves the page, the (routed) network answers it as an overloaded server does —
    `dialogue.error` with `retry_after_s` — instead of passing it on; the page sends the same frame again after
    the pause, and the real server answers it."""
    sent: list[dict] = []

    def network(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str) -> None:
            frame = json.loads(message)
            if frame["type"] == "dialogue.input":
                sent.append(frame["payload"])
                if len(sent) == 1:
                    ws.send(
                        json.dumps(
                            {
                                "type": "dialogue.error",
                                "timestamp": frame["timestamp"],
                                "payload": {
                                    "code": "overloaded",
                                    "message": "The turn could not finish inside its budget.",
                                    "field": None,
                                    "retry_after_s": 1,
                                    "client_message_id": frame["payload"]["client_message_id"],
                                },
                            }
                        )
                    )
                    return
            server.send(message)

        ws.on_message(from_page)

    demo = DemoPage(browser, serve_app["url"], tmp_path, route_socket=network)
    try:
        demo.say("把空调调到二十二度")
        bot = demo.last_bot()
        expect(bot.locator(".note.error")).to_contain_text("sent again in 1 s (1/3)")
        expect(bot.locator(".reply")).to_contain_text("22")
        assert len(sent) == 2 and sent[0] == sent[1]  # the same frame, the same client_message_id
        assert bot.get_attribute("data-events") == "execution.result"
    finally:
        demo.close()
