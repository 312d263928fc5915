"""The user's calendar seen by the agents over the served app: an imported calendar's event is listed, marked by its
calendar, when the user asks 明天有什么安排 over HTTP."""

from __future__ import annotations

import uuid

from tests.integration.timeflow.test_agents_over_http import Http, app, register  # noqa: F401 — `app`: the fixture

TEAM = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//team//EN\r\nBEGIN:VEVENT\r\nUID:weekly-sync@team\r\n"
    "DTSTAMP:20261201T000000Z\r\nDTSTART;TZID=Asia/Shanghai:20261203T100000\r\n"
    "DTEND;TZID=Asia/Shanghai:20261203T110000\r\nSUMMARY:项目周会\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


def test_tomorrows_agenda_over_http_lists_a_calendar_event(app):  # noqa: F811 — the fixture imported above
    user = register(app)
    client, headers = app["client"], user["headers"]
    created = client.post(
        "/api/v1/calendar/imports",
        headers=headers,
        files={"file": ("team.ics", TEAM.encode(), "text/calendar")},
        data={"name": "团队"},
    )
    assert created.status_code == 201, created.text
    assert created.json()["preview"]["events"] == 1
    decided = client.post(
        f"/api/v1/write-requests/{created.json()['write_request']['write_request_id']}/decide",
        headers=headers,
        json={"decision": "confirmed", "idempotency_key": uuid.uuid4().hex},
    )
    assert decided.status_code == 200 and decided.json()["status"] == "applied", decided.text

    http = Http(app, user)
    for _ in range(3):  # a turn whose model stage missed its budget on this busy machine may understand less
        turn = http.chat("明天有什么安排")
        if turn["status"] == "completed" and not turn["timings"]["degraded"]:
            break
    assert turn["agent"]["target_agent_name"] == "schedule_todo_agent", turn
    assert "10:00 项目周会（日历：团队）" in turn["reply"], turn["reply"]
