"""What the calendar store tests share: a user, settings that let a CalDAV URL be on 127.0.0.1, a sealed password,
items written through the write gate, objects put on the server directly."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from caldav.collection import Calendar
from caldav.davclient import DAVClient
from cryptography.fernet import Fernet
from pydantic import SecretStr

from config.calendar import CalendarConfig
from config.settings import load_settings
from engine.calendars.secrets import PasswordBox
from protocol.rest import WriteRequestCreate
from store import users, write_gate
from store.calendars import caldav_sync, sources
from tests.support.packs import CONFIG_DIR
from tests.support.radicale import USERS

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 7, 4, 0, tzinfo=UTC)
BOX = PasswordBox(SecretStr(Fernet.generate_key().decode()))


def config() -> CalendarConfig:
    cfg = load_settings(CONFIG_DIR, {}).calendar
    return cfg.model_copy(update={"caldav": cfg.caldav.model_copy(update={"allow_private": True, "timeout_s": 30})})


async def new_user(db) -> uuid.UUID:
    async with db.connection() as conn:
        user = await users.register(conn, email=f"{uuid.uuid4().hex}@cal.test", password_hash="x", display_name=None)
    return user.id


async def link(db, user_id, url: str, *, user: str = "alice", password: str | None = None) -> uuid.UUID:
    async with db.connection() as conn:
        source = await sources.create(
            conn, user_id, kind="caldav", name=f"cal-{uuid.uuid4().hex[:6]}", url=url, username=user,
            password_sealed=BOX.seal(password or USERS[user]),
        )  # fmt: skip
    return source.id


async def sync(db, user_id, source_id, cfg: CalendarConfig | None = None):
    return await caldav_sync.sync(db, BOX, cfg or config(), TZ, user_id, source_id, now=NOW)


async def write(db, user_id, action: str, payload: dict, target_id=None) -> uuid.UUID:
    """An item write through the write gate, confirmed."""
    async with db.connection() as conn:
        created = await write_gate.create(
            conn, user_id,
            WriteRequestCreate(action=action, target_type="task_item", target_id=target_id, payload=payload,
                               preview_text="日程"),
            idempotency_key=uuid.uuid4().hex, ttl_s=900, now=datetime.now(UTC),
        )  # fmt: skip
        decided = await write_gate.decide(
            conn, user_id, created.write_request_id, decision="confirmed", idempotency_key=uuid.uuid4().hex,
            payload_hash=None,
        )  # fmt: skip
    assert decided.status == "applied"
    return decided.applied_target_id


def server_calendar(url: str, user: str = "alice") -> Calendar:
    return Calendar(client=DAVClient(url=url, username=user, password=USERS[user]), url=url)


def put(calendar: Calendar, ics: str, href: str | None = None, *, uid: str | None = None) -> str:
    """One object PUT as a calendar app would (at `href`, or a new one named by `uid`)."""
    href = href or f"{calendar.url}{uid}.ics"
    response = calendar.client.put(href, ics, {"Content-Type": "text/calendar; charset=utf-8"})
    assert response.status in (201, 204), response.status
    return href


def vevent(uid: str, summary: str, start: str, end: str, *, tzid: str | None = None, extra: str = "") -> str:
    when = f";TZID={tzid}" if tzid else ""
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:20261201T000000Z\r\nDTSTART{when}:{start}\r\nDTEND{when}:{end}\r\n"
        f"SUMMARY:{summary}\r\n{extra}END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
