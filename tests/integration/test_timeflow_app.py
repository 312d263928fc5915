"""The timeflow pack served by the same app (BATON_PACK switch): accuracy and decided turns with time ranges."""
from __future__ import annotations

import copy

import httpx
import pytest

from serve_app import launcher


def _deploy_pack(serve_app, pack: str) -> None:
    config = copy.deepcopy(serve_app["config"])
    config["applications"][0]["args"]["pack"] = pack
    launcher.start(config)
    port = config["http_options"]["port"]
    # the old pack keeps answering until the new replicas are up: wait for the new one by name
    import time

    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json().get("pack") == pack:
                break
        except httpx.HTTPError:
            pass
        time.sleep(1)
    launcher.wait_until_healthy(port, timeout_s=120)


@pytest.fixture(scope="module")
def timeflow_client(serve_app, timeflow):
    _deploy_pack(serve_app, "timeflow")
    try:
        with httpx.Client(base_url=serve_app["url"], timeout=10.0) as client:
            yield client
    finally:
        _deploy_pack(serve_app, "cockpit")


def test_timeflow_served_accuracy(timeflow_client, timeflow):
    pack, _ = timeflow
    rows = pack.test_rows()
    answers = [timeflow_client.post("/api/v1/agent/chat", json={"user_id": "tf-eval", "text": t}).json() for t, _ in rows]
    accuracy = sum(a["intent"] == gold for a, (_, gold) in zip(answers, rows)) / len(rows)
    print(f"served timeflow test-split accuracy: {accuracy:.3f} over {len(rows)} rows")
    assert accuracy >= 0.90


def test_schedule_turn_is_decided_with_a_time_range(timeflow_client):
    body = timeflow_client.post("/api/v1/agent/chat", json={"user_id": "tf", "text": "明天下午三点提醒我去开会"}).json()
    assert body["status"] == "decided" and body["intent"] == "schedule_create"
    decision = body["decision"]
    assert decision["agent"] == "schedule_todo_agent" and decision["function"] == "create"
    assert decision["time_range"]["start"].endswith("15:00:00+08:00")
    assert body["result"] is None  # decided, never a pretend execution
