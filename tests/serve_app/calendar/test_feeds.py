"""The feed out over HTTP: a secret URL any calendar app reads without a login, the user's items as VEVENT/VTODO
with stable UIDs and their time zone, 304 while nothing changed, the change on the next fetch, and revocation."""

from __future__ import annotations

import pytest
import recurring_ical_events
from icalendar import Calendar

from tests.serve_app.calendar.conftest import MEETING, REPORT, signed_in, write_item

pytestmark = pytest.mark.store


def test_a_feed_serves_the_items_and_answers_304_until_they_change(client):
    headers = signed_in(client)
    meeting = write_item(client, headers, "create", MEETING)
    report = write_item(client, headers, "create", REPORT)
    created = client.post("/api/v1/calendar/feeds", headers=headers)
    assert created.status_code == 201, created.text
    token, url = created.json()["token"], created.json()["url"]
    assert url == f"/api/v1/calendar/feeds/{token}.ics"

    fetched = client.get(url)  # no login: the token is the secret
    assert fetched.status_code == 200 and fetched.headers["content-type"].startswith("text/calendar")
    assert fetched.headers["etag"] and fetched.headers["last-modified"].endswith("GMT")
    calendar = Calendar.from_ical(fetched.content)
    assert [str(tz["TZID"]) for tz in calendar.walk("VTIMEZONE")] == ["Asia/Shanghai"]
    (event,) = calendar.walk("VEVENT")
    assert str(event["UID"]) == f"{meeting}@baton" and str(event["SUMMARY"]) == "组会"
    assert event["DTSTART"].params["TZID"] == "Asia/Shanghai"
    assert event["DTSTART"].dt.isoformat() == "2026-12-10T15:00:00+08:00"
    assert event["DTEND"].dt.isoformat() == "2026-12-10T16:30:00+08:00"
    (todo,) = calendar.walk("VTODO")
    assert str(todo["UID"]) == f"{report}@baton" and str(todo["STATUS"]) == "NEEDS-ACTION"
    assert todo["DUE"].dt.isoformat() == "2026-12-12T18:00:00+08:00"
    # a calendar library reading it as a subscriber would: the week's occurrences
    week = recurring_ical_events.of(calendar, components=("VEVENT", "VTODO")).between((2026, 12, 7), (2026, 12, 14))
    assert sorted(str(c["SUMMARY"]) for c in week) == ["交实验报告", "组会"]

    etag = fetched.headers["etag"]
    unchanged = client.get(url, headers={"If-None-Match": etag})
    assert unchanged.status_code == 304 and unchanged.content == b"" and unchanged.headers["etag"] == etag

    write_item(client, headers, "update", {"title": "组会（改到 B 楼）", "status": "completed"}, target_id=meeting)
    changed = client.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    (event,) = Calendar.from_ical(changed.content).walk("VEVENT")
    assert str(event["UID"]) == f"{meeting}@baton"  # the same event, updated
    assert str(event["SUMMARY"]) == "组会（改到 B 楼）" and str(event["TRANSP"]) == "TRANSPARENT"


def test_a_revoked_feed_and_another_users_token_answer_404(client):
    owner, other = signed_in(client), signed_in(client)
    token = client.post("/api/v1/calendar/feeds", headers=owner).json()["token"]
    assert client.delete(f"/api/v1/calendar/feeds/{token}.ics", headers=other).status_code == 404
    assert client.get(f"/api/v1/calendar/feeds/{token}.ics").status_code == 200
    assert client.delete(f"/api/v1/calendar/feeds/{token}.ics", headers=owner).status_code == 204
    gone = client.get(f"/api/v1/calendar/feeds/{token}.ics")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    assert client.post("/api/v1/calendar/feeds").status_code == 401
