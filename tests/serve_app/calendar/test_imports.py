"""Calendars in over HTTP: an .ics upload (a feed Baton exported, a Moodle-style export with VTODO deadlines) and a
feed URL become one write request previewing how many events and the date range; its confirmation imports them as
read-only entries of that source; a re-import updates what changed and removes what vanished; refusals are typed."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.serve_app.calendar.conftest import MEETING, REPORT, confirm, signed_in, write_item

pytestmark = pytest.mark.store

MOODLE = b"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//Moodle Pty Ltd//NONSGML Moodle Version 2025041400//EN\r
BEGIN:VTODO\r
UID:1234@moodle.example.edu\r
DTSTAMP:20261201T000000Z\r
SUMMARY:\xe4\xbd\x9c\xe4\xb8\x9a 3 \xe6\x88\xaa\xe6\xad\xa2\r
DUE:20261215T155900Z\r
CATEGORIES:COMP101\r
END:VTODO\r
BEGIN:VTODO\r
UID:1235@moodle.example.edu\r
DTSTAMP:20261201T000000Z\r
SUMMARY:Quiz 2 closes\r
DUE:20261218T155900Z\r
END:VTODO\r
END:VCALENDAR\r
"""


def _series(moved: bool) -> bytes:
    """A weekly seminar (4 times) and a one-off talk; `moved`: the second seminar moved, the last one dropped
    (EXDATE) and the talk renamed."""
    exdate = "EXDATE;TZID=Asia/Shanghai:20261222T140000\r\n" if moved else ""
    override = (
        "BEGIN:VEVENT\r\nUID:seminar@uni\r\nDTSTAMP:20261201T000000Z\r\n"
        "RECURRENCE-ID;TZID=Asia/Shanghai:20261208T140000\r\n"
        "DTSTART;TZID=Asia/Shanghai:20261209T100000\r\nDTEND;TZID=Asia/Shanghai:20261209T110000\r\n"
        "SUMMARY:Seminar (moved)\r\nEND:VEVENT\r\n"
        if moved
        else ""
    )
    talk = "Talk: calendars (room 2)" if moved else "Talk: calendars"
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
        "BEGIN:VEVENT\r\nUID:seminar@uni\r\nDTSTAMP:20261201T000000Z\r\n"
        "DTSTART;TZID=Asia/Shanghai:20261201T140000\r\nDTEND;TZID=Asia/Shanghai:20261201T150000\r\n"
        f"RRULE:FREQ=WEEKLY;COUNT=4\r\n{exdate}SUMMARY:Seminar\r\nEND:VEVENT\r\n{override}"
        "BEGIN:VEVENT\r\nUID:talk@uni\r\nDTSTAMP:20261201T000000Z\r\n"
        "DTSTART:20261211T020000Z\r\nDTEND:20261211T030000Z\r\n"
        f"SUMMARY:{talk}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    ).encode()


def _import(client, headers, data: bytes, name: str | None = None, file_name: str = "export.ics"):
    return client.post(
        "/api/v1/calendar/imports",
        headers=headers,
        files={"file": (file_name, data, "text/calendar")},
        data={"name": name} if name else None,
    )


def _agenda(client, headers, start="2026-11-30T00:00:00+08:00", end="2027-01-01T00:00:00+08:00"):
    answer = client.get("/api/v1/calendar/agenda", headers=headers, params={"start_at": start, "end_at": end})
    assert answer.status_code == 200, answer.text
    return answer.json()["entries"]


def test_a_feed_exported_by_baton_reimports_into_a_fresh_user(client):
    exporter, importer = signed_in(client), signed_in(client)
    write_item(client, exporter, "create", MEETING)
    write_item(client, exporter, "create", REPORT)
    feed = client.get(client.post("/api/v1/calendar/feeds", headers=exporter).json()["url"]).content

    created = _import(client, importer, feed, name="Baton 导出")
    assert created.status_code == 201, created.text
    preview = created.json()["preview"]
    assert (preview["events"], preview["deadlines"]) == (2, 1)
    text = created.json()["write_request"]["confirmation_payload"]["preview_text"]
    assert "2 个日程" in text and "2026-12-10 至 2026-12-12" in text
    assert _agenda(client, importer) == []  # nothing before the confirmation

    confirm(client, importer, created.json()["write_request"]["write_request_id"])
    entries = [e["entry"] for e in _agenda(client, importer)]
    assert all(e["source_name"] == "Baton 导出" and e["source_kind"] == "upload" for e in entries)
    meeting, report = entries
    assert (meeting["kind"], meeting["title"]) == ("event", "组会")
    assert (meeting["start_at"], meeting["end_at"]) == ("2026-12-10T07:00:00Z", "2026-12-10T08:30:00Z")
    assert (report["kind"], report["title"], report["due_at"]) == ("deadline", "交实验报告", "2026-12-12T10:00:00Z")
    mine = _agenda(client, exporter)
    assert [line["source"] for line in mine] == ["baton", "baton"]


def test_a_moodle_export_imports_its_vtodos_as_deadlines(client):
    headers = signed_in(client)
    created = _import(client, headers, MOODLE, file_name="icalexport.ics")
    assert created.json()["preview"] == {
        "events": 2,
        "deadlines": 2,
        "first_at": "2026-12-15T15:59:00Z",
        "last_at": "2026-12-18T15:59:00Z",
    }
    confirm(client, headers, created.json()["write_request"]["write_request_id"])
    entries = [line["entry"] for line in _agenda(client, headers)]
    assert [(e["kind"], e["title"], e["source_name"]) for e in entries] == [
        ("deadline", "作业 3 截止", "icalexport"),
        ("deadline", "Quiz 2 closes", "icalexport"),
    ]
    assert not any(e["busy"] for e in entries)  # a deadline takes no time


def test_a_reimport_updates_changes_and_removes_what_vanished(client):
    headers = signed_in(client)
    first = _import(client, headers, _series(moved=False), name="课程")
    assert first.json()["preview"]["events"] == 5
    confirm(client, headers, first.json()["write_request"]["write_request_id"])
    before = {(e["uid"], e["recurrence_id"]): e for e in (line["entry"] for line in _agenda(client, headers))}
    assert len(before) == 5

    second = _import(client, headers, _series(moved=True), name="课程")
    assert second.json()["write_request"]["confirmation_payload"]["target_id"] is not None  # the same source
    confirm(client, headers, second.json()["write_request"]["write_request_id"])
    after = {(e["uid"], e["recurrence_id"]): e for e in (line["entry"] for line in _agenda(client, headers))}
    assert set(after) == set(before) - {("seminar@uni", "20261222T060000Z")}
    moved = after[("seminar@uni", "20261208T060000Z")]
    assert moved["id"] == before[("seminar@uni", "20261208T060000Z")]["id"]  # updated in place
    assert (moved["title"], moved["start_at"]) == ("Seminar (moved)", "2026-12-09T02:00:00Z")
    assert after[("talk@uni", "")]["title"] == "Talk: calendars (room 2)"
    unchanged = ("seminar@uni", "20261201T060000Z")
    assert after[unchanged] == before[unchanged]
    status = client.get("/api/v1/calendar/status", headers=headers).json()
    assert [(s["name"], s["kind"], s["entries"]) for s in status["sources"]] == [("课程", "upload", 4)]


class _Feed(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/calendar")
        self.send_header("Content-Length", str(len(MOODLE)))
        self.end_headers()
        self.wfile.write(MOODLE)

    def log_message(self, *args) -> None:
        pass


def test_a_feed_url_on_an_allowed_host_imports_and_refreshes(client):
    headers = signed_in(client)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Feed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/moodle.ics"
        created = client.post("/api/v1/calendar/subscriptions", headers=headers, json={"name": "Moodle", "url": url})
        assert created.status_code == 201, created.text
        source_id = confirm(client, headers, created.json()["write_request"]["write_request_id"])["applied_target_id"]
        refreshed = client.post(f"/api/v1/calendar/sources/{source_id}/sync", headers=headers)
        assert refreshed.status_code == 200 and refreshed.json()["entries"] == 2 and refreshed.json()["url"] == url
    finally:
        server.shutdown()
        server.server_close()
    gone = client.post(f"/api/v1/calendar/sources/{source_id}/sync", headers=headers)  # the server is gone
    assert gone.status_code == 200 and gone.json()["entries"] == 2  # the entries stay as they were
    assert gone.json()["last_error"].startswith("The feed could not be fetched")


def test_refusals_are_typed(client):
    headers = signed_in(client)
    elsewhere = client.post(
        "/api/v1/calendar/subscriptions",
        headers=headers,
        json={"name": "x", "url": "https://calendar.example.com/a.ics"},
    )
    assert elsewhere.status_code == 422 and elsewhere.json()["error"]["code"] == "feed_host_not_allowed"
    too_big = _import(client, headers, b"BEGIN:VCALENDAR\r\n" + b"X" * (300 * 1024))
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "calendar_too_large"
    garbage = _import(client, headers, b"not a calendar")
    assert garbage.status_code == 422 and garbage.json()["error"]["code"] == "invalid_calendar"
