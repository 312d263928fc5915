"""Background CalDAV sync, per replica: every `calendar.caldav.interval_s` the calendars due are synced one at a
time, each claimed in the store so two replicas never sync the same one. It runs beside the turns, outside their
admission and budgets; a failure is recorded on the source (GET /api/v1/calendar/status) and logged by its kind
only (never a URL's credentials or a password)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from uuid import UUID
from zoneinfo import ZoneInfo

from config.settings import Settings
from engine.calendars.caldav_client import CalDavFailed
from engine.calendars.fetch import fetch_feed
from engine.calendars.ics_in import read_calendar
from engine.calendars.model import CalendarTooLarge, FeedRefused, InvalidCalendar
from engine.calendars.secrets import PasswordBox
from engine.clock import app_clock
from store.calendars import caldav_sync, imports, sources
from store.calendars.caldav_sync import SyncReport
from store.database import Database
from store.errors import NotFound, StoreUnavailable

log = logging.getLogger(__name__)
DUE_PER_ROUND = 20


class CalendarSync:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.cfg = settings.calendar
        self.box = PasswordBox(settings.env.calendar_key)
        self.tz = ZoneInfo(settings.timezone)
        self.clock = app_clock(self.tz, settings.testing.now)  # the app's clock: pinned in tests
        self._task: asyncio.Task[None] | None = None
        self._one = asyncio.Lock()  # one sync at a time on this replica
        self._kicked: set[asyncio.Task[None]] = set()  # held until done (the loop keeps only weak references)

    def now(self) -> datetime:
        return self.clock()

    def start(self) -> None:
        """Start the background loop on the running event loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="calendar-sync")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_due()
            except Exception as exc:  # the loop outlives any one round's failure (a store outage included)
                log.warning("calendar sync round failed: %s", type(exc).__name__)
            await asyncio.sleep(self.cfg.caldav.interval_s)

    async def run_due(self) -> int:
        """Sync the CalDAV calendars and fetch the feed URLs that are due; how many went through."""
        interval = self.cfg.caldav.interval_s
        async with self.db.connection() as conn:
            calendars = await sources.due(conn, kind="caldav", interval_s=interval, limit=DUE_PER_ROUND)
            feeds = await sources.due(conn, kind="url", interval_s=interval, limit=DUE_PER_ROUND)
        done = 0
        for user_id, source_id in calendars:
            try:
                await self.sync_one(user_id, source_id)
                done += 1
            except CalDavFailed as exc:
                log.info("calendar %s did not sync: %s", source_id, exc.reason)
        for user_id, source_id in feeds:
            done += await self.refresh_feed(user_id, source_id)
        return done

    async def refresh_feed(self, user_id: UUID, source_id: UUID) -> bool:
        """Fetch a subscribed feed URL again and apply its changes; a refusal is recorded on the source."""
        async with self.db.connection() as conn:
            source = await sources.get(conn, user_id, source_id)
        if source.url is None:
            return False
        start, end = (
            self.now() - timedelta(days=self.cfg.horizon_past_days),
            self.now() + timedelta(days=self.cfg.horizon_days),
        )
        try:
            data = await fetch_feed(source.url, self.cfg.fetch)
            events = await asyncio.to_thread(
                read_calendar, data, tz=self.tz, start=start, end=end, max_events=self.cfg.max_events
            )
        except (FeedRefused, InvalidCalendar, CalendarTooLarge) as exc:
            async with self.db.connection() as conn:
                await sources.failed(conn, source_id, exc.message)
            log.info("feed %s was not refreshed: %s", source_id, exc.code)
            return False
        async with self.db.connection() as conn:
            await imports.refresh(conn, user_id, source_id, events)
        return True

    def kick(self, user_id: UUID, source_id: UUID) -> None:
        """Sync one calendar soon, in the background (a newly linked one); its outcome shows in its status."""
        task = asyncio.get_running_loop().create_task(self._quietly(user_id, source_id))
        self._kicked.add(task)
        task.add_done_callback(self._kicked.discard)

    async def _quietly(self, user_id: UUID, source_id: UUID) -> None:
        try:
            await self.sync_one(user_id, source_id)
        except (CalDavFailed, NotFound, StoreUnavailable):
            pass  # recorded on the source (the status shows it), or the source went away meanwhile

    async def sync_one(self, user_id: UUID, source_id: UUID) -> SyncReport | None:
        """Sync one calendar now; None when another replica is syncing it."""
        hold_s = self.cfg.caldav.timeout_s * 10 + 60
        async with self._one:
            async with self.db.connection() as conn:
                if not await sources.claim(conn, source_id, hold_s=hold_s):
                    return None
            try:
                return await caldav_sync.sync(self.db, self.box, self.cfg, self.tz, user_id, source_id, now=self.now())
            finally:
                async with self.db.connection() as conn:
                    await sources.release(conn, source_id)
