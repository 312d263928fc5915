"""The split layout on the real cluster: an Encoder deployment whose response the orchestrator passes straight into
three head deployments. Deployed as a second application of the session's Serve instance (text only, under /split)."""

from __future__ import annotations

import copy
import time

import httpx
import pytest
import yaml

from serve_app.ops import launcher
from tests.support.http_client import served_client
from tests.support.packs import CONFIG_DIR
from tests.support.serving import until_fault_shows

APP, PREFIX = "baton_split", "/split"
HEADS = ("classifier", "detector", "retriever")


@pytest.fixture(scope="module")
def split_client(serve_app):
    from ray import serve

    config = copy.deepcopy(serve_app["config"])
    split = yaml.safe_load((CONFIG_DIR / "serve_local_split.yaml").read_text(encoding="utf-8"))["applications"][0]
    app = config["applications"][0]
    app.update(name=APP, route_prefix=PREFIX)
    app["args"].update(layout="split", media=False, planner="none")
    app["deployments"] = [d for d in split["deployments"] if d["name"] not in ("ASR", "OCR")]
    for deployment in app["deployments"]:  # beside the fused app on 2 logical CPUs: one replica each, scheduled now
        deployment["ray_actor_options"] = {**deployment.get("ray_actor_options", {}), "num_cpus": 0.01}
        deployment["autoscaling_config"] = {**deployment["autoscaling_config"], "min_replicas": 1, "max_replicas": 1}
    launcher.start({**config, "applications": [app]})
    url = f"{serve_app['url']}{PREFIX}"
    try:
        with served_client(url, 15.0) as client:
            deadline, health = time.time() + 240, None
            while True:
                try:
                    health = client.get("/health")
                    if health.status_code == 200:
                        break
                except httpx.HTTPError as exc:
                    health = exc
                assert time.time() < deadline, (
                    f"the split app never became healthy: {getattr(health, 'text', health)}; "
                    f"{serve.status().applications[APP]}"
                )
                time.sleep(1.0)
            yield client
    finally:
        serve.delete(APP)


def test_a_split_turn_runs_the_encoder_then_the_three_heads_in_parallel(split_client):
    body = split_client.post("/api/v1/agent/chat", json={"user_id": "split-1", "text": "把空调调到二十二度"}).json()
    assert body["status"] == "completed" and body["intent"] == "cabin_set_ac", body
    timings = body["timings"]
    assert timings["degraded"] == [] and {"encoder", *HEADS} <= timings["stages"].keys()
    encoder_end = timings["spans_ms"]["encoder"][1]
    for head in HEADS:
        start, end = timings["spans_ms"][head]
        assert start >= encoder_end - 0.5 and end <= timings["total_ms"], head


def test_a_two_clause_turn_is_detected_in_the_split_layout_too(split_client):
    body = split_client.post("/api/v1/agent/chat", json={"user_id": "split-2", "text": "打开车窗然后播放音乐"}).json()
    assert body["timings"]["degraded"] == []
    assert {c["intent"] for c in body["detected_intents"]} == {"cabin_window_open", "cabin_play_music"}


def test_a_slow_encoder_degrades_every_head_that_reads_it(serve_app, split_client):
    launcher.set_faults(serve_app["config"], "encoder:delay_ms=800")
    try:
        body, wall_ms = until_fault_shows(
            lambda: split_client.post("/api/v1/agent/chat", json={"user_id": "split-3", "text": "打开车窗"}).json(),
            lambda b: bool(b["timings"]["degraded"]),
        )
    finally:
        launcher.set_faults(serve_app["config"], "")
    assert body["timings"]["degraded"] == ["encoder", *HEADS]
    assert wall_ms <= body["timings"]["budget_ms"] + 50
    time.sleep(0.5)
