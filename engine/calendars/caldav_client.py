"""One CalDAV calendar collection through the `caldav` library (blocking: callers run it in a thread). Changes come
incrementally by the collection's sync-token (RFC 6578), or as a full listing where the server has none; Baton's
items go up as objects named by their UID."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from caldav.calendarobjectresource import CalendarObjectResource
from caldav.collection import Calendar
from caldav.davclient import DAVClient
from caldav.elements import dav
from caldav.lib import error
from caldav.lib.url import URL

MULTIGET = 100  # objects per calendar-multiget REPORT


class CalDavFailed(Exception):
    """The server refused or could not be reached; `reason` is what the status shows (never a credential)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class RemoteObject:
    href: str
    etag: str | None
    ics: str


@dataclass(frozen=True)
class RemoteChanges:
    changed: list[RemoteObject]
    deleted: list[str]
    sync_token: str | None
    full: bool  # a full listing: an href not in it has gone


def _reason(exc: Exception) -> str:
    if isinstance(exc, error.AuthorizationError):
        return "The server refused the username or app password (HTTP 401/403)."
    if isinstance(exc, error.NotFoundError):
        return "The server has no calendar at that URL (HTTP 404)."
    if isinstance(exc, error.DAVError):
        return f"The server answered with an error ({type(exc).__name__})."
    if isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower():
        return "The server did not answer in time."
    if isinstance(exc, OSError) or "connect" in type(exc).__name__.lower():
        return "The server could not be reached."
    return f"The sync failed ({type(exc).__name__})."


class CalDavCalendar:
    """The calendar collection at `url`, signed in as `username`. Objects are written with the client's own PUT and
    DELETE (the server's ETag read from the answer); changes are read with the library's sync-collection REPORT."""

    def __init__(self, url: str, username: str, password: str, *, timeout_s: float) -> None:
        self.url = url if url.endswith("/") else url + "/"
        self.client = DAVClient(url=self.url, username=username, password=password, timeout=int(max(timeout_s, 1)))
        self.calendar = Calendar(client=self.client, url=self.url)

    def close(self) -> None:
        self.client.close()

    def changes(self, sync_token: str | None, *, max_objects: int) -> RemoteChanges:
        """What changed since `sync_token`: the sync-collection REPORT names the members with their ETags (a removed
        member has none), then calendar-multiget REPORTs fetch the changed ones `MULTIGET` at a time."""
        try:
            collection = self.calendar.objects_by_sync_token(sync_token=sync_token, load_objects=False)
            listed = {str(obj.url.canonical()): obj.props.get(dav.GetEtag.tag) for obj in collection.objects}
            present = [href for href, etag in listed.items() if etag]
            if len(present) > max_objects:
                raise CalDavFailed(f"The calendar holds more than {max_objects} objects; not synced.")
            data: dict[str, str] = {}
            for at in range(0, len(present), MULTIGET):
                batch = [URL.objectify(href) for href in present[at : at + MULTIGET]]
                found: list[CalendarObjectResource] = list(self.calendar.multiget(batch))
                data |= {str(obj.url.canonical()): obj.data for obj in found if obj.url is not None}
        except CalDavFailed:
            raise
        except Exception as exc:  # the library raises its own errors and its HTTP client's
            raise CalDavFailed(_reason(exc)) from exc
        changed = [RemoteObject(href=h, etag=listed[h], ics=data[h]) for h in present if data.get(h)]
        deleted = {h for h, etag in listed.items() if not etag} | {h for h in present if not data.get(h)}
        token = str(collection.sync_token) if collection.sync_token is not None else None
        full = sync_token is None or token is None or token.startswith("fake-")
        return RemoteChanges(changed=changed, deleted=sorted(deleted), sync_token=token, full=full)

    def put(self, ics: str, *, uid: str, href: str | None) -> tuple[str, str | None]:
        """Store one object (a new one named by its UID, or the one at `href`); returns its href and ETag."""
        target = href or self.url + quote(uid, safe="") + ".ics"
        try:
            response = self.client.put(target, ics, {"Content-Type": "text/calendar; charset=utf-8"})
        except Exception as exc:
            raise CalDavFailed(_reason(exc)) from exc
        if response.status not in (200, 201, 204):
            raise CalDavFailed(f"The server refused to store an item (HTTP {response.status}).")
        return target, response.headers.get("ETag")

    def delete(self, href: str) -> None:
        try:
            response = self.client.delete(href)
        except error.NotFoundError:
            return  # gone already: what a delete wanted
        except Exception as exc:
            raise CalDavFailed(_reason(exc)) from exc
        if response.status not in (200, 204, 404):
            raise CalDavFailed(f"The server refused to delete an item (HTTP {response.status}).")
