"""The `calendar:` section: the feed out, imports of iCalendar files and feed URLs, and CalDAV sync
(docs/calendars.md)."""

from __future__ import annotations

from pydantic import Field, model_validator

from config.base import Section


class FeedFetchConfig(Section):
    """How a registered feed URL is fetched: only named hosts, never into this machine's or a private network unless
    an operator says so, bounded in time and size."""

    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names a feed URL may name (exact, lower case); empty = no feed URL is accepted.",
    )
    allow_private: bool = Field(
        default=False,
        description="Whether a feed host may resolve to a loopback, private, link-local or reserved address.",
    )
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="The whole fetch, redirects included.")
    max_bytes: int = Field(default=5_242_880, gt=0, description="A feed body over this many bytes is refused.")
    max_redirects: int = Field(default=3, ge=0, le=10, description="Redirects followed, each to the same host only.")


class CalDavConfig(Section):
    interval_s: float = Field(
        default=300.0, gt=0, description="How often a linked calendar is synced in the background."
    )
    timeout_s: float = Field(default=20.0, gt=0, description="Each request to a CalDAV server.")
    allow_private: bool = Field(
        default=False,
        description="Whether a CalDAV URL may point at a loopback or private address (a server on this machine).",
    )
    max_objects: int = Field(default=5000, gt=0, description="Objects one sync reads from a calendar at most.")


class CalendarConfig(Section):
    feed_base_url: str = Field(
        default="", description="Origin put before a feed's path in its `url` (e.g. https://baton.example)."
    )
    feed_max_items: int = Field(default=5000, gt=0, description="Items a feed holds at most (the latest updated).")
    max_upload_bytes: int = Field(default=2_097_152, gt=0, description="An uploaded .ics file over this is refused.")
    max_events: int = Field(
        default=5000, gt=0, description="Events (occurrences included) one import may hold; more is refused."
    )
    horizon_past_days: int = Field(default=30, ge=0, description="Recurring events are expanded from this far back…")
    horizon_days: int = Field(default=365, gt=0, description="…to this far ahead of now.")
    key_env: str = Field(
        default="BATON_CALENDAR_KEY",
        description="The variable holding the Fernet key that encrypts CalDAV passwords at rest.",
    )
    fetch: FeedFetchConfig = Field(default_factory=FeedFetchConfig)
    caldav: CalDavConfig = Field(default_factory=CalDavConfig)

    @model_validator(mode="after")
    def _lower_case_hosts(self) -> CalendarConfig:
        if any(h != h.strip().lower() or not h for h in self.fetch.allowed_hosts):
            raise ValueError("calendar.fetch.allowed_hosts holds plain lower-case host names.")
        return self
