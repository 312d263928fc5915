"""The real app on Ray Serve, driven over HTTP: served accuracy, budgets under fault injection, bad input."""

from __future__ import annotations

import time

import httpx
import pytest

from serve_app.ops import launcher
from tests.support.http_client import served_client
from tests.support.serving import until_fault_shows

CHAT = "/api/v1/agent/chat"
FILL = "/api/v1/agent/fill-slots"
MARGIN_MS = 50


@pytest.fixture(scope="module")
def client(serve_app):
    with served_client(serve_app["url"], 10.0) as c:
        yield c


def chat(client, text, session_id=None, user_id="it-user"):
    body = {"user_id": user_id, "text": text, **({"session_id": session_id} if session_id else {})}
    resp = client.post(CHAT, json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_health_reports_the_pack(client):
    resp = client.get("/health")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok", "pack": "cockpit"}


@pytest.mark.parametrize("kind", ["text", "image"])
def test_the_first_turns_after_health_is_green_run_every_stage(serve_app, kind):
    """Sent the moment /health answered 200 (the session fixture): nothing degraded, nothing skipped."""
    first = serve_app["first_turns"][kind]
    assert first["status_code"] == 200, first
    timings = first["timings"]
    assert timings["degraded"] == []
    assert {"encoder", "classifier", "detector", "retriever", *(["ocr"] if kind == "image" else [])} <= timings[
        "stages"
    ].keys()
    assert first["status"] == "completed"
    assert first["intent"] == ("cabin_window_open" if kind == "text" else "cabin_set_ac")


def test_served_top1_accuracy_on_the_test_split(client, cockpit):
    pack, _ = cockpit
    rows = pack.test_rows()
    answers = [chat(client, text, user_id="eval") for text, _ in rows]
    hits = sum(a["intent"] == gold for a, (_, gold) in zip(answers, rows, strict=True))
    degraded = sum(bool(a["timings"]["degraded"]) for a in answers)
    accuracy = hits / len(rows)
    print(f"served cockpit test-split accuracy: {accuracy:.3f} over {len(rows)} rows ({degraded} degraded turns)")
    for a, (text, gold) in zip(answers, rows, strict=True):
        if a["intent"] != gold:
            print(
                "  miss:",
                text,
                gold,
                a["intent"],
                a["status"],
                a["timings"]["degraded"],
                {k: (v["candidates"][:1], v["error"]) for k, v in a["routing_debug"]["stages"].items()},
            )
    assert accuracy >= 0.90


def test_turn_response_contract(client):
    body = chat(client, "把空调调到二十二度")
    assert body["status"] == "completed" and body["intent"] == "cabin_set_ac"
    assert body["slots"]["temperature"] == 22
    stages = body["timings"]["stages"]
    assert {
        "auth",
        "lease",
        "keyword",
        "encoder",
        "classifier",
        "retriever",
        "detector",
        "fusion",
        "slots",
        "execute",
        "commit",
    } <= stages.keys()
    assert "store" not in stages  # the plugin's world came with the session lease
    assert all(v > 0 for k, v in stages.items() if k in ("encoder", "classifier", "retriever", "detector", "commit"))
    assert body["timings"]["budget_ms"] == 600 and body["timings"]["degraded"] == []
    debug = body["routing_debug"]
    assert debug["fusion"]["decision"] == "execute"
    assert debug["stages"]["classifier"]["candidates"][0]["intent"] == "cabin_set_ac"


def test_window_state_changes_and_follow_up_rewrite(client):
    first = chat(client, "帮我把车窗打开", user_id="car-1")
    sid = first["session_id"]
    assert first["result"]["data"]["window_open"] is True
    closed = chat(client, "关窗", session_id=sid, user_id="car-1")
    assert closed["intent"] == "cabin_window_close" and closed["result"]["data"]["window_open"] is False
    chat(client, "空调调到24度", session_id=sid, user_id="car-1")
    warmer = chat(client, "再调高两度", session_id=sid, user_id="car-1")
    assert warmer["routing_debug"]["rewrite"]["applied"] is True
    assert warmer["slots"]["temperature"] == 26


def test_slot_filling_over_http(client):
    asked = chat(client, "开个导航")
    assert asked["status"] == "waiting_slot" and asked["pending_slots"] == ["destination"]
    resp = client.post(FILL, json={"session_id": asked["session_id"], "user_id": "it-user", "text": "去公司"})
    assert resp.status_code == 200
    assert resp.json()["status"] == "completed" and resp.json()["slots"]["destination"] == "公司"


def test_fill_slots_without_an_active_task_is_fallback(client):
    resp = client.post(FILL, json={"session_id": "never-seen", "user_id": "it-user", "text": "公司"})
    assert resp.status_code == 200 and resp.json()["status"] == "fallback"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"user_id": "u", "text": "   "}, 422, "text"),
        ({"user_id": "u", "text": "开" * 2001}, 422, "text"),
        ({"user_id": "u", "text": 123}, 422, "text"),
        ({"user_id": "u"}, 422, "text"),
        ({"text": "打开车窗"}, 422, "user_id"),
        ({"user_id": "u", "text": "打开车窗", "extra": 1}, 422, "extra"),
    ],
)
def test_bad_bodies_get_the_error_envelope(client, body, status, field):
    resp = client.post(CHAT, json=body)
    assert resp.status_code == status
    error = resp.json()["error"]
    assert error["field"] == field and error["code"] and error["message"]


@pytest.mark.parametrize("raw", [b'{"user_id": "u", "text": ', b"\xff\xfe\x00", b'{"user_id":"u","text":"\xff"}'])
def test_malformed_bodies_are_400_and_the_session_survives(client, raw):
    start = chat(client, "导航", user_id="bad-1")
    resp = client.post(CHAT, content=raw, headers={"content-type": "application/json"})
    assert resp.status_code == 400 and resp.json()["error"]["code"] in ("invalid_json", "bad_request")
    follow = client.post(FILL, json={"session_id": start["session_id"], "user_id": "bad-1", "text": "去人民广场"})
    assert follow.json()["status"] == "completed" and follow.json()["slots"]["destination"] == "人民广场"


def test_another_users_session_id_is_a_session_of_the_callers_own(client):
    sid = chat(client, "打开车窗", user_id="owner")["session_id"]
    resp = client.post(CHAT, json={"session_id": sid, "user_id": "intruder", "text": "关窗"})
    assert resp.status_code == 200 and resp.json()["session_id"] == sid  # theirs, new: nothing says the id is taken


def _wait_for_degraded(client, stages: list[str]) -> tuple[dict, float]:
    return until_fault_shows(
        lambda: chat(client, "打开车窗", user_id="fault"), lambda b: b["timings"]["degraded"] == stages
    )


def test_a_failing_classifier_head_degrades_alone(serve_app, client):
    launcher.set_faults(serve_app["config"], "classifier:error=1")
    try:
        body, _ = _wait_for_degraded(client, ["classifier"])
        assert body["timings"]["degraded"] == ["classifier"]
        assert body["status"] == "completed" and body["intent"] == "cabin_window_open"
        assert "injected" in body["routing_debug"]["stages"]["classifier"]["error"]
    finally:
        launcher.set_faults(serve_app["config"], "")
    time.sleep(0.5)


def _models_deployment(serve_app) -> str:
    """The deployment whose replicas run the encoder: the Orchestrator itself in the `inline` layout, else NLU."""
    return "Orchestrator" if serve_app["config"]["applications"][0]["args"]["layout"] == "inline" else "NLU"


def _cancelled_by_replica(handle, deployment: str) -> dict[int, int]:
    """Each running replica's cancellation count: a handle call reaches one replica, so ask until all answered."""
    from ray import serve

    running = serve.status().applications[launcher.APP_NAME].deployments[deployment].replica_states.get("RUNNING", 0)
    seen: dict[int, int] = {}
    deadline = time.time() + 20
    while len(seen) < running and time.time() < deadline:
        stats = handle.stats.remote().result(timeout_s=10)
        seen[stats["pid"]] = stats["cancelled"]
    assert len(seen) >= running, f"{len(seen)} of {running} {deployment} replicas answered"
    return seen


def test_a_slow_encoder_degrades_every_head_inside_the_budget_and_is_cancelled(serve_app, client):
    from ray import serve

    deployment = _models_deployment(serve_app)
    handle = serve.get_deployment_handle(deployment, app_name=launcher.APP_NAME)
    before = _cancelled_by_replica(handle, deployment)
    launcher.set_faults(serve_app["config"], "encoder:delay_ms=800")
    try:
        body, wall_ms = _wait_for_degraded(client, ["encoder", "classifier", "detector", "retriever"])
        assert body["timings"]["degraded"] == ["encoder", "classifier", "detector", "retriever"]
        assert wall_ms <= body["timings"]["budget_ms"] + MARGIN_MS
        assert body["timings"]["total_ms"] <= body["timings"]["budget_ms"]
        # keywords alone cannot execute: the turn asks instead of guessing
        assert body["status"] == "clarify" and body["intent"] == "cabin_window_open"
        assert body["routing_debug"]["stages"]["encoder"]["degraded"] is True
        time.sleep(0.2)  # the cancellation reaches the replica asynchronously
        after = _cancelled_by_replica(handle, deployment)
        assert any(after[pid] > before.get(pid, 0) for pid in after), (before, after)
    finally:
        launcher.set_faults(serve_app["config"], "")
    time.sleep(0.5)


def _turns_total(port: int) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return sum(
        s.value
        for fam in text_string_to_metric_families(text)
        if fam.name == "baton_turns"
        for s in fam.samples
        if s.name == "baton_turns_total"
    )


def test_metrics_endpoint_counts_the_turns_sent(client, serve_app):
    port = serve_app["metrics_port"]
    deadline = time.time() + 30
    while True:  # the exporter binds in the background
        try:
            before = _turns_total(port)
            break
        except httpx.HTTPError:
            assert time.time() < deadline, f"no metrics on :{port}"
            time.sleep(0.5)
    for text in ("打开车窗", "你好", "把音量调小一点"):
        chat(client, text, user_id="metrics")
    assert _turns_total(port) == before + 3
