"""The user's calendars in the two open standards: iCalendar feeds out and in (`icalendar`, `recurring-ical-events`)
and CalDAV (`caldav`); plain Python, no store and no serving layer."""
