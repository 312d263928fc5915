"""The user's calendars in the store: feeds out, calendar sources and their read-only entries, imports through the
write gate, CalDAV sync state."""
