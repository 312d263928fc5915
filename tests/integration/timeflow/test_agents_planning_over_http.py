"""A planning request over HTTP (seed 000's Scheduling chain): the turn answers with its task level, a draft whose
slots lie in the user's free time, and the write behind the gate; the goal and its sessions exist only after 确认.
(Named to run right after test_agents_over_http, on the app it already switched to timeflow.)"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.integration.timeflow.test_agents_over_http import TZ, Http, register
from tests.support.serving import PINNED_NOW


@pytest.fixture(scope="module")
def tf(switch_pack, timeflow, served):
    with switch_pack("timeflow") as client:
        yield {"client": client, "url": served.url}


def _goals(app, user) -> list[dict]:
    resp = app["client"].get("/api/v1/long-goals", headers=user["headers"])
    assert resp.status_code == 200, resp.text
    return resp.json()["goals"]


def _week(app, user) -> list[dict]:
    start = PINNED_NOW.replace(hour=0)
    resp = app["client"].get(
        "/api/v1/items/timeline",
        headers=user["headers"],
        params={"start_at": start.isoformat(), "end_at": (start + timedelta(days=7)).isoformat()},
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


def test_a_planning_request_is_a_draft_whose_slots_exist_only_after_confirmation(tf):
    app, user = tf, register(tf)
    http = Http(app, user)
    http.confirmed("明天晚上六点半提醒我开组会")  # an item the draft must plan around
    busy = [(datetime.fromisoformat(i["start_at"]), datetime.fromisoformat(i["end_at"])) for i in _week(app, user)]
    assert len(busy) == 1

    turn = http.proposed("打算这周每天晚上写一小时小说", "scheduling_agent")
    agent = turn["agent"]
    assert agent["target_agent_name"] == "scheduling_agent", agent
    draft = agent["scheduling"]
    assert draft["task_level"] == "L2" and draft["kind"] == "plan" and draft["missing"] == [], draft
    slots = [(datetime.fromisoformat(s["start_at"]), datetime.fromisoformat(s["end_at"])) for s in draft["slots"]]
    # one evening hour a day from today (Wednesday) to Sunday; tomorrow's after the 18:30 item
    assert [s.astimezone(TZ).day for s, _ in slots] == [2, 3, 4, 5, 6], draft
    assert all(s >= PINNED_NOW and s.astimezone(TZ).hour >= 18 and e.astimezone(TZ).hour <= 21 for s, e in slots)
    assert all(e - s == timedelta(hours=1) for s, e in slots)
    assert not any(s < b_end and b_start < e for s, e in slots for b_start, b_end in busy)
    assert slots[1][0].astimezone(TZ).strftime("%H:%M") == "19:30"
    assert _goals(app, user) == [] and len(_week(app, user)) == 1  # nothing before the decision

    assert http.fill("确认")["agent"]["status"] == "applied"
    assert [g["title"] for g in _goals(app, user)] == [draft["title"]]
    sessions = sorted(datetime.fromisoformat(i["start_at"]) for i in _week(app, user) if i["item_type"] == "subtask")
    assert sessions == [s for s, _ in slots]
