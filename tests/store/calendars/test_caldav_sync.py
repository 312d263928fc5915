"""Two-way CalDAV sync against a real Radicale: the first sync of a large calendar (recurrences, two time zones),
incremental syncs, Baton's items going up, edits and deletions both ways, conflicts by last modification (the
losing version kept in the conversation log) and failures recorded on the source."""

from __future__ import annotations

import pytest
from icalendar import Calendar as ICalendar

from engine.calendars.caldav_client import CalDavFailed
from store.calendars import sources
from tests.store.calendars.support import link, new_user, put, server_calendar, sync, vevent, write

pytestmark = pytest.mark.store

ITEM = {
    "item_type": "schedule",
    "title": "牙医复诊",
    "start_at": "2026-12-10T15:00:00+08:00",
    "end_at": "2026-12-10T16:00:00+08:00",
}


async def _entries(db, source_id):
    async with db.connection() as conn:
        return await conn.fetch(
            "SELECT uid, recurrence_id, title, start_at, end_at, tzid, href FROM calendar_entries WHERE source_id = $1"
            " ORDER BY start_at, uid",
            source_id,
        )


async def test_a_large_calendar_comes_down_then_only_its_changes(db, radicale):
    url = radicale.make_calendar("alice", "large")
    calendar = server_calendar(url)
    objects = {}
    for n in range(110):
        zone = "Asia/Shanghai" if n % 2 else "America/New_York"
        day = 1 + n % 28
        start, end = f"202612{day:02d}T0900{n % 60:02d}", f"202612{day:02d}T1000{n % 60:02d}"
        objects[f"single-{n}.ics"] = vevent(f"single-{n}", f"会议 {n}", start, end, tzid=zone)
    for n in range(12):
        objects[f"weekly-{n}.ics"] = vevent(
            f"weekly-{n}", f"周会 {n}", "20261201T140000Z", "20261201T150000Z", extra="RRULE:FREQ=WEEKLY;COUNT=8\r\n"
        )
    radicale.place("alice", "large", objects)
    user_id = await new_user(db)
    source_id = await link(db, user_id, url)

    first = await sync(db, user_id, source_id)
    rows = await _entries(db, source_id)
    assert len(rows) == 110 + 12 * 8 >= 200
    assert first.down.entries_changed == 206
    assert {r["tzid"] for r in rows} >= {"Asia/Shanghai", "America/New_York"}
    ny = next(r for r in rows if r["uid"] == "single-0")
    assert ny["start_at"].isoformat() == "2026-12-01T14:00:00+00:00"  # 09:00 in New York, winter time
    weekly = [r for r in rows if r["uid"] == "weekly-0"]
    assert len(weekly) == 8 and len({r["recurrence_id"] for r in weekly}) == 8

    again = await sync(db, user_id, source_id)
    assert again.down.entries_changed == 0 and again.down.entries_removed == 0  # nothing changed: nothing re-read

    href = next(r["href"] for r in rows if r["uid"] == "single-1")
    put(calendar, vevent("single-1", "改期的会议", "20261215T100000", "20261215T110000", tzid="Asia/Shanghai"), href)
    calendar.event_by_uid("single-2").delete()
    await sync(db, user_id, source_id)
    rows = {r["uid"]: r for r in await _entries(db, source_id)}
    assert rows["single-1"]["title"] == "改期的会议"
    assert rows["single-1"]["start_at"].isoformat() == "2026-12-15T02:00:00+00:00"
    assert "single-2" not in rows and len(rows) == 109 + 12  # by uid: a weekly series counts once


async def test_items_go_up_and_deletions_go_both_ways(db, radicale):
    url = radicale.make_calendar("alice", "items")
    calendar = server_calendar(url)
    user_id = await new_user(db)
    source_id = await link(db, user_id, url)
    item_id = await write(db, user_id, "create", ITEM)
    todo = {"item_type": "todo", "title": "交报告", "due_at": "2026-12-12T18:00:00+08:00"}
    todo_id = await write(db, user_id, "create", todo)

    report = await sync(db, user_id, source_id)
    assert report.pushed == 2
    pushed = ICalendar.from_ical(calendar.event_by_uid(f"{item_id}@baton").data).walk("VEVENT")[0]
    assert str(pushed["SUMMARY"]) == "牙医复诊"
    assert pushed["DTSTART"].dt.isoformat() == "2026-12-10T15:00:00+08:00"
    assert pushed["DTSTART"].params["TZID"] == "Asia/Shanghai"
    echo = await sync(db, user_id, source_id)  # Baton's own writes come back with the ETags it stored: no news
    assert echo.pushed == 0 and echo.down.items_updated == 0 and echo.down.conflicts == []
    assert await _entries(db, source_id) == []  # Baton's own objects never come back as calendar entries

    await write(db, user_id, "delete", {}, target_id=item_id)
    assert (await sync(db, user_id, source_id)).deleted_remote == 1
    assert f"{item_id}@baton" not in {str(o.icalendar_component["UID"]) for o in calendar.events()}

    calendar.object_by_uid(f"{todo_id}@baton").delete()
    assert (await sync(db, user_id, source_id)).down.items_deleted == 1
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT is_deleted FROM task_items WHERE id = $1", todo_id)


async def _log(db, user_id):
    async with db.connection() as conn:
        return await conn.fetch(
            "SELECT raw_content, metadata FROM conversation_messages WHERE user_id = $1 AND role = 'system'"
            " ORDER BY message_index",  # the log's order; a heap's is none
            user_id,
        )


async def test_conflicts_go_by_the_later_modification_and_keep_the_loser(db, radicale):
    url = radicale.make_calendar("alice", "conflicts")
    calendar = server_calendar(url)
    user_id = await new_user(db)
    source_id = await link(db, user_id, url)
    item_id = await write(db, user_id, "create", ITEM)
    await sync(db, user_id, source_id)
    href = str(calendar.event_by_uid(f"{item_id}@baton").url)

    # both sides change it; the server's change is the later one: it wins, Baton's version goes to the log
    await write(db, user_id, "update", {"title": "Baton 改的"}, target_id=item_id)
    later = "LAST-MODIFIED:20990101T000000Z\r\n"
    put(calendar, vevent(f"{item_id}@baton", "日历改的", "20261210T160000", "20261210T170000", tzid="Asia/Shanghai",
                         extra=later), href)  # fmt: skip
    report = await sync(db, user_id, source_id)
    assert report.down.conflicts == [str(item_id)] and report.pushed == 0
    async with db.connection() as conn:
        item = await conn.fetchrow("SELECT title, start_at FROM task_items WHERE id = $1", item_id)
    assert item["title"] == "日历改的" and item["start_at"].isoformat() == "2026-12-10T08:00:00+00:00"
    (notice,) = await _log(db, user_id)
    lost = notice["metadata"]["parsed_params"]["calendar_conflict"]
    assert lost["losing_side"] == "baton" and lost["losing_version"]["title"] == "Baton 改的"

    # again both change it; now Baton's change is the later one: the server gets Baton's version
    await write(db, user_id, "update", {"title": "Baton 再改"}, target_id=item_id)
    earlier = "LAST-MODIFIED:20200101T000000Z\r\n"
    put(calendar, vevent(f"{item_id}@baton", "日历再改", "20261210T160000", "20261210T170000", tzid="Asia/Shanghai",
                         extra=earlier), href)  # fmt: skip
    report = await sync(db, user_id, source_id)
    assert report.down.conflicts == [str(item_id)] and report.pushed == 1
    on_server = ICalendar.from_ical(calendar.event_by_uid(f"{item_id}@baton").data).walk("VEVENT")[0]
    assert str(on_server["SUMMARY"]) == "Baton 再改"
    notices = await _log(db, user_id)
    assert notices[-1]["metadata"]["parsed_params"]["calendar_conflict"]["losing_version"]["title"] == "日历再改"


async def test_a_wrong_password_and_an_unreachable_server_are_in_the_status(db, radicale):
    url = radicale.make_calendar("alice", "failures")
    user_id = await new_user(db)
    wrong = await link(db, user_id, url, password="not-the-password")
    gone = await link(db, user_id, "http://127.0.0.1:9/alice/none/")
    for source_id in (wrong, gone):
        with pytest.raises(CalDavFailed):
            await sync(db, user_id, source_id)
    async with db.connection() as conn:
        status = {s.id: s for s in await sources.statuses(conn, user_id)}
    assert "username or app password" in status[wrong].last_error
    assert "could not be reached" in status[gone].last_error
    assert status[wrong].last_synced_at is None
    assert "not-the-password" not in status[wrong].model_dump_json()
