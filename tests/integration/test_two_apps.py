"""Both assistants in one cluster (served): beside the session's app, the other pack as a second Serve application
under its own route prefix, built as `BATON_APPS=all` builds it (serve_app.ops.apps), calling the session app's
ASR, OCR and Planner instead of deploying its own. Each app answers its own pack's turns, a photo goes through the
shared OCR from the second app, and a session of one assistant is not resumed by the other.

The session's app stays as it is (no redeploy): the second app is the pack it does not serve, and goes away after.
Where the session app serves neither shipped pack (a pack built from rows, switched to last) it serves cockpit first.
The whole config with both apps under their prefixes is checked in tests/serve_app/ops/test_apps.py; held-out turns
of both packs, one cluster against each alone, in benchmarks/two_apps.py."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ray import serve

from serve_app.args import INGRESS, MEDIA, PLANNER
from serve_app.ops import launcher
from serve_app.ops.apps import per_pack

PACKS = ("cockpit", "timeflow")
TURNS = {
    "cockpit": [("打开空调", "cabin_ac_on"), ("导航去机场", "cabin_nav_to"), ("下一首歌", "cabin_music_next")],
    "timeflow": [("明天下午三点开会", "schedule_create"), ("我明天有什么安排", "schedule_query")],
}
PHOTO = {"cockpit": ("把空调调到二十二度", "cabin_set_ac"), "timeflow": ("明天下午三点开会", "schedule_create")}


@pytest.fixture(scope="module")
def both_packs(served, cockpit, timeflow) -> Iterator[dict[str, Any]]:
    """The session's app (one pack, at /) and the other pack's app at /<pack>, sharing the first one's models."""
    if served.pack not in PACKS:
        served.serve("cockpit")
    first = served.pack
    second = next(p for p in PACKS if p != first)
    config = copy.deepcopy(served.config)
    config["applications"][0]["args"]["pack"] = first
    app = per_pack(config, [first, second])["applications"][1]
    app["args"]["shared_from"] = launcher.APP_NAME  # the session's app owns the shared models
    app["args"]["assistants"] = {first: "", second: f"/{second}"}
    for deployment in app["deployments"]:
        if deployment["name"] == INGRESS:  # a few turns, not capacity: one replica
            deployment["autoscaling_config"].update(min_replicas=1, max_replicas=1)
            # the session's Ray was started for one app (2 logical CPUs, 1.75 held by it); `make run BATON_APPS=all`
            # sizes Ray for both (launcher.logical_cpus)
            deployment["ray_actor_options"]["num_cpus"] = 0.25
    launcher.start({**config, "applications": [app]})
    try:
        launcher.wait_until_healthy(served.port, timeout_s=300, apps={second: f"/{second}"})
        with (
            httpx.Client(base_url=served.url, timeout=30) as one,
            httpx.Client(base_url=f"{served.url}/{second}", timeout=30) as other,
        ):
            yield {"first": first, "second": second, "clients": {first: one, second: other}}
    finally:
        serve.delete(second)


def test_the_second_app_deploys_its_own_ingress_and_calls_the_first_apps_shared_models(both_packs):
    status = serve.status().applications
    second = status[both_packs["second"]]
    assert set(second.deployments) == {INGRESS}, "inline: its text models run in its own Orchestrator"
    shared = {*MEDIA.values(), PLANNER}
    assert shared <= set(status[launcher.APP_NAME].deployments)
    # green means every stage answered its warm-up through this app's handles: the shared ones included
    for pack, client in both_packs["clients"].items():
        health = client.get("/health").json()
        assert (health["status"], health["pack"]) == ("ok", pack)


@pytest.mark.parametrize("pack", PACKS)
def test_each_app_answers_its_own_packs_turns(both_packs, pack):
    client = both_packs["clients"][pack]
    for text, intent in TURNS[pack]:
        body = client.post("/api/v1/agent/chat", json={"user_id": f"two-{pack}", "text": text}).json()
        assert body["intent"] == intent, (text, body)


def test_a_photo_sent_to_the_second_app_goes_through_the_shared_ocr(both_packs):
    from benchmarks.media_samples import available_fonts, render_text

    pack = both_packs["second"]
    client = both_packs["clients"][pack]
    text, intent = PHOTO[pack]
    png = render_text(text, font=available_fonts()[0], size=36)
    media = client.post(
        "/api/v1/media/upload", data={"file_type": "image", "user_id": "two-photo"}, files={"file": ("p.png", png)}
    ).json()
    body = client.post(
        "/api/v1/agent/chat", json={"user_id": "two-photo", "modality": "image_ocr", "source_url": media["source_url"]}
    ).json()
    assert body["recognition"]["status"] == "ok" and body["intent"] == intent, body


def test_one_assistants_session_is_refused_by_the_other(both_packs):
    first, second = both_packs["first"], both_packs["second"]
    clients, session = both_packs["clients"], f"two-{uuid.uuid4().hex[:8]}"
    turn = {"user_id": "two-sessions", "session_id": session}
    started = clients[first].post("/api/v1/agent/chat", json={**turn, "text": TURNS[first][0][0]})
    assert started.status_code == 200, started.text
    refused = clients[second].post("/api/v1/agent/chat", json={**turn, "text": TURNS[second][0][0]})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "session_other_assistant", refused.text
    assert clients[second].get("/demo/assistants").json()["assistants"] == {first: "", second: f"/{second}"}
