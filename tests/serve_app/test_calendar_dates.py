"""Relative dates read against the app's calendar clock at the instants that cross a boundary: a Sunday evening (明天
is next week), a month's last evening and the year's last evening. A schedule, its feedback, a replan and a review,
over the WebSocket, on the timeflow pack's real models and the real store, with the clock pinned (`testing.now`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

import httpx
import pytest

from config.settings import Settings
from deployments.in_process import InProcessModels
from deployments.nlu import build_nlu
from serve_app.http.api import create_api
from serve_app.state import ModelClients, build_state, on_start
from tests.support.serving import TZ
from tests.support.store_app import served
from tests.support.ws_client import Conversation, types

INSTANTS = {
    "sunday evening": datetime(2026, 12, 6, 22, 30, tzinfo=TZ),
    "a month's last evening": datetime(2026, 11, 30, 21, 0, tzinfo=TZ),
    "the year's last evening": datetime(2026, 12, 31, 22, 0, tzinfo=TZ),
}


@pytest.fixture(scope="module")
def models(timeflow: tuple[Any, Settings]) -> Iterator[ModelClients]:
    _, settings = timeflow
    yield ModelClients(nlu=InProcessModels(build_nlu(settings), workers=1))


@pytest.fixture(params=list(INSTANTS), scope="module")
def app(
    request: pytest.FixtureRequest, timeflow: tuple[Any, Settings], models: ModelClients, postgres: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    _, settings = timeflow
    now = INSTANTS[request.param]
    pinned = settings.model_copy(update={"testing": settings.testing.model_copy(update={"now": now})})
    api = create_api()
    on_start(api, lambda db: build_state(pinned, models, db), postgres["dsn"], pinned)
    with served(api) as url:
        with httpx.Client(base_url=url, timeout=30) as client:
            body = client.post(
                "/api/v1/auth/register",
                json={"email": f"{uuid.uuid4().hex[:12]}@example.com", "password": "long enough pw"},
            ).json()
            yield {
                "url": url,
                "client": client,
                "now": now,
                "token": body["access_token"],
                "headers": {"Authorization": f"Bearer {body['access_token']}"},
            }


def day_items(app: dict[str, Any], day: date) -> list[dict[str, Any]]:
    start = datetime(day.year, day.month, day.day, tzinfo=TZ)
    resp = app["client"].get(
        "/api/v1/items/timeline",
        headers=app["headers"],
        params={"start_at": start.isoformat(), "end_at": (start + timedelta(days=1)).isoformat()},
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


def confirmed(conv: Conversation, text: str) -> list[dict[str, Any]]:
    events = conv.say(text)
    assert types(events)[-1] == "write.confirmation_required", events
    assert types(conv.decide(events[-1])) == ["write.applied"]
    return events


def local(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(TZ)


def test_a_schedule_a_missed_item_replanned_and_the_weeks_review_fall_on_the_right_days(app: dict[str, Any]):
    now: datetime = app["now"]
    today, tomorrow = now.date(), now.date() + timedelta(days=1)
    conv = Conversation(app["url"], app["token"])
    try:
        confirmed(conv, "明天上午九点去跑步")
        assert [(i["title"], local(i["start_at"]).strftime("%H:%M")) for i in day_items(app, tomorrow)] == [
            ("去跑步", "09:00")
        ]

        confirmed(conv, "今天晚上十一点四十提醒我健身")
        assert [local(i["start_at"]) for i in day_items(app, today) if i["title"] == "健身"] == [
            datetime(today.year, today.month, today.day, 23, 40, tzinfo=TZ)
        ]
        feedback = confirmed(conv, "今天的健身没完成")
        assert feedback[0]["payload"]["target_agent_name"] == "feedback_agent"
        replan = confirmed(conv, "帮我把没完成的重新安排一下")
        assert replan[0]["payload"]["target_agent_name"] == "replan_agent"
        moved = [i for i in day_items(app, tomorrow) if i["title"] == "健身"]
        assert [local(i["start_at"]) for i in moved] == [
            datetime(tomorrow.year, tomorrow.month, tomorrow.day, 23, 40, tzinfo=TZ)
        ]

        review = conv.say("帮我复盘一下这周")
        decision = review[0]["payload"]
        assert decision["target_agent_name"] == "review_agent" and types(review)[-1] == "execution.result", review
        monday = today - timedelta(days=today.weekday())
        assert (local(decision["time_range"]["start_at"]), local(decision["time_range"]["end_at"])) == (
            datetime(monday.year, monday.month, monday.day, tzinfo=TZ),
            datetime(monday.year, monday.month, monday.day, tzinfo=TZ) + timedelta(days=7),
        )
    finally:
        conv.close()
