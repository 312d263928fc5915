"""What a calendar import or sync yields: one occurrence per row, keyed by its UID and RECURRENCE-ID."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from engine.errors import BatonError, InvalidInput

EntryKind = Literal["event", "deadline"]
BATON_UID_DOMAIN = "baton"  # an item's UID is `{item_id}@baton`: stable across feeds and syncs


@dataclass(frozen=True)
class CalendarEvent:
    """One occurrence: an event (start–end) or a deadline (a VTODO's due time). `recurrence_id` is '' for an event
    that does not recur, else the occurrence's RECURRENCE-ID (UTC, or a date)."""

    uid: str
    recurrence_id: str
    kind: EntryKind
    title: str
    start_at: datetime | None
    end_at: datetime | None
    due_at: datetime | None
    all_day: bool = False
    tzid: str | None = None
    status: str | None = None
    busy: bool = True
    description: str | None = None
    location: str | None = None
    last_modified: datetime | None = None
    href: str | None = None
    etag: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.uid, self.recurrence_id

    def as_json(self) -> dict[str, Any]:
        """The event as a write request's payload holds it (times as ISO 8601 with their offset)."""
        return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CalendarEvent:
        times = ("start_at", "end_at", "due_at", "last_modified")
        values: dict[str, Any] = {k: datetime.fromisoformat(v) if k in times and v else v for k, v in data.items()}
        return cls(**values)


def item_uid(item_id: object) -> str:
    return f"{item_id}@{BATON_UID_DOMAIN}"


class InvalidCalendar(InvalidInput):
    """The bytes are not an iCalendar file Baton can read (or hold more than an import may)."""

    code = "invalid_calendar"


class FeedRefused(InvalidInput):
    """A feed URL that is not fetched: a host not allowed, an address refused, a redirect elsewhere, a failed fetch.
    `code` says which."""

    code = "feed_refused"


class FeedHostNotAllowed(FeedRefused):
    code = "feed_host_not_allowed"


class FeedAddressRefused(FeedRefused):
    """The host is, or resolves to, a loopback, private, link-local or reserved address."""

    code = "feed_address_refused"


class FeedRedirectRefused(FeedRefused):
    code = "feed_redirect_refused"


class FeedTimeout(FeedRefused):
    code = "feed_timeout"


class FeedUnreachable(FeedRefused):
    code = "feed_unreachable"


class CalendarTooLarge(BatonError):
    """An uploaded file or a fetched feed over its size limit (413)."""

    code = "calendar_too_large"


class CalendarKeyMissing(BatonError):
    """No encryption key is configured, so no CalDAV password can be stored (503: an operator's setting)."""

    code = "calendar_key_missing"
