"""Linking a CalDAV calendar over HTTP, against a real Radicale: the app password is never returned, the first sync
runs in the background and its events show in the agenda; a wrong password is reported in the status, not as a
failed request; an item written after the link goes up on the next sync."""

from __future__ import annotations

import time

import pytest
from caldav.collection import Calendar
from caldav.davclient import DAVClient

from tests.serve_app.calendar.conftest import MEETING, signed_in, write_item
from tests.support.radicale import USERS

pytestmark = pytest.mark.store

EVENT = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:standup@team\r\n"
    "DTSTAMP:20261201T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261208T090000\r\n"
    "DTEND;TZID=Europe/Berlin:20261208T091500\r\nRRULE:FREQ=DAILY;COUNT=3\r\nSUMMARY:Stand-up\r\n"
    "END:VEVENT\r\nEND:VCALENDAR\r\n"
)


def _status(client, headers, source_id, *, until) -> dict:
    deadline = time.monotonic() + 20
    while True:
        sources = client.get("/api/v1/calendar/status", headers=headers).json()["sources"]
        source = next(s for s in sources if s["id"] == source_id)
        if until(source) or time.monotonic() > deadline:
            return source
        time.sleep(0.1)


def test_a_linked_calendar_syncs_in_the_background_and_failures_show_in_the_status(client, radicale):
    url = radicale.make_calendar("bob", "team")
    server = Calendar(client=DAVClient(url=url, username="bob", password=USERS["bob"]), url=url)
    server.client.put(f"{url}standup.ics", EVENT, {"Content-Type": "text/calendar"})
    headers = signed_in(client)
    body = {"name": "团队日历", "url": url, "username": "bob", "password": USERS["bob"]}
    linked = client.post("/api/v1/calendar/caldav", headers=headers, json=body)
    assert linked.status_code == 201, linked.text
    assert USERS["bob"] not in linked.text and "password" not in linked.json()
    source = _status(client, headers, linked.json()["id"], until=lambda s: s["last_synced_at"] or s["last_error"])
    assert source["last_error"] is None and source["entries"] == 3

    lines = client.get(
        "/api/v1/calendar/agenda",
        headers=headers,
        params={"start_at": "2026-12-08T00:00:00+08:00", "end_at": "2026-12-09T00:00:00+08:00"},
    ).json()["entries"]
    assert [(line["source"], line["entry"]["title"], line["entry"]["start_at"]) for line in lines] == [
        ("calendar", "Stand-up", "2026-12-08T08:00:00Z")
    ]

    item = write_item(client, headers, "create", MEETING)
    synced = client.post(f"/api/v1/calendar/sources/{linked.json()['id']}/sync", headers=headers)
    assert synced.status_code == 200 and synced.json()["last_error"] is None
    assert str(server.event_by_uid(f"{item}@baton").icalendar_component["SUMMARY"]) == "组会"

    wrong = client.post("/api/v1/calendar/caldav", headers=headers, json={**body, "name": "错的", "password": "nope"})
    assert wrong.status_code == 201
    failed = _status(client, headers, wrong.json()["id"], until=lambda s: s["last_error"])
    assert "username or app password" in failed["last_error"] and failed["last_synced_at"] is None
    again = client.post(f"/api/v1/calendar/sources/{wrong.json()['id']}/sync", headers=headers)
    assert again.status_code == 200 and again.json()["last_error"] == failed["last_error"]
