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
    http.confirmed("明天下午两点提醒我开组会")  # an item the draft must plan around
    busy = [(i["start_at"], i["end_at"]) for i in _week(app, user)]

    turn = http.proposed("这周想约三次羽毛球", "scheduling_agent")
    agent = turn["agent"]
    assert agent["target_agent_name"] == "scheduling_agent", agent
    draft = agent["scheduling"]
    assert draft["task_level"] == "L2" and draft["kind"] == "plan" and len(draft["slots"]) == 3, draft
    assert draft["missing"] == ["duration"] and draft["questions"] and draft["next_steps_suggestion"]
    for slot in draft["slots"]:
        start, end = datetime.fromisoformat(slot["start_at"]), datetime.fromisoformat(slot["end_at"])
        assert start >= PINNED_NOW and 9 <= start.astimezone(TZ).hour and end.astimezone(TZ).hour <= 21
        assert not any(
            start < datetime.fromisoformat(b_end) and datetime.fromisoformat(b_start) < end for b_start, b_end in busy
        )
    assert _goals(app, user) == [] and len(_week(app, user)) == 1  # nothing before the decision

    assert http.fill("确认")["agent"]["status"] == "applied"
    goals = _goals(app, user)
    assert [g["title"] for g in goals] == [draft["title"]]
    sessions = sorted(i["start_at"] for i in _week(app, user) if i["item_type"] == "subtask")
    assert [datetime.fromisoformat(s) for s in sessions] == [
        datetime.fromisoformat(s["start_at"]) for s in draft["slots"]
    ]
