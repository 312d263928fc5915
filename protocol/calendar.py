"""Wire types of the user's calendars (docs/calendars.md): feeds out, imports and feed URLs in, CalDAV links, the
sync status and the calendar entries a time range holds."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import Field, StrictStr

from protocol.base import WireModel
from protocol.rest import WriteRequestCreated
from protocol.store import TaskItemDTO
from protocol.strings import NonBlankStr, PlainStr

SourceKind = Literal["upload", "url", "caldav"]


class FeedCreated(WireModel):
    url: str = Field(description="The feed's address: the token is its only secret (anyone holding it reads it).")
    token: str = Field(description="Shown once; Baton keeps only its sha256. DELETE the feed by it to revoke it.")


class ImportPreview(WireModel):
    events: int = Field(description="Occurrences the import holds (recurrences expanded over the horizon).")
    deadlines: int = Field(description="Of them, deadlines (VTODO with a due time).")
    first_at: datetime | None = None
    last_at: datetime | None = None


class CalendarImportCreated(WireModel):
    """An import waiting for its one confirmation (POST /api/v1/write-requests/{id}/decide)."""

    write_request: WriteRequestCreated
    preview: ImportPreview


HTTP_URL = r"^https?://[^/?#\s]+"


class FeedUrlRequest(WireModel):
    name: NonBlankStr = Field(min_length=1, max_length=100)
    url: PlainStr = Field(
        min_length=8, max_length=2000, pattern=HTTP_URL, description="On a host the deployment allows (calendar.fetch)."
    )


class CalDavLinkRequest(WireModel):
    name: NonBlankStr = Field(min_length=1, max_length=100)
    url: PlainStr = Field(min_length=8, max_length=2000, pattern=HTTP_URL, description="The calendar collection's URL.")
    username: PlainStr = Field(min_length=1, max_length=256)
    password: StrictStr = Field(
        min_length=1, max_length=512, description="An app password; stored encrypted, never returned."
    )


class CalendarSourceStatus(WireModel):
    id: UUID
    kind: SourceKind
    name: str
    url: str | None = None
    username: str | None = None
    entries: int
    last_synced_at: datetime | None = None
    last_error: str | None = None
    last_error_at: datetime | None = None


class CalendarStatusResponse(WireModel):
    sources: list[CalendarSourceStatus]
    feeds: int = Field(description="Feeds out not revoked.")


class CalendarEntryDTO(WireModel):
    id: UUID
    source_id: UUID
    source_name: str
    source_kind: SourceKind
    uid: str
    recurrence_id: str
    kind: Literal["event", "deadline"]
    title: str
    description: str | None = None
    location: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    due_at: datetime | None = None
    all_day: bool
    status: str | None = None
    busy: bool


class AgendaEntry(WireModel):
    """One line of a time range: a Baton item or a calendar entry, marked by `source`."""

    source: Literal["baton", "calendar"]
    item: TaskItemDTO | None = None
    entry: CalendarEntryDTO | None = None


class AgendaResponse(WireModel):
    entries: list[AgendaEntry]
