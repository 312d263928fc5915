-- 0013: the user's calendars (docs/calendars.md). A feed out is a secret token (stored as its sha256 only); a
-- calendar source is an uploaded file, a feed URL or a linked CalDAV calendar (its app password encrypted by the
-- application, never in clear); its entries are read-only occurrences keyed by UID + RECURRENCE-ID ('' for an event
-- that does not recur). An import is a write request (action 'import', target 'calendar_source').
CREATE TABLE IF NOT EXISTS calendar_feeds (
id uuid PRIMARY KEY DEFAULT baton_uuid7(),
user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
token_hash text NOT NULL,
created_at timestamptz NOT NULL DEFAULT now(),
revoked_at timestamptz,
CONSTRAINT calendar_feeds_token_hash_uq UNIQUE (token_hash),
CONSTRAINT calendar_feeds_user_id_uq UNIQUE (user_id, id)
);
CREATE TABLE IF NOT EXISTS calendar_sources (
id uuid PRIMARY KEY DEFAULT baton_uuid7(),
user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
kind text NOT NULL,
name text NOT NULL,
url text,
username text,
password_sealed bytea,
sync_token text,
last_synced_at timestamptz,
sync_claimed_at timestamptz,
last_error text,
last_error_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT calendar_sources_user_id_uq UNIQUE (user_id, id),
CONSTRAINT calendar_sources_user_name_uq UNIQUE (user_id, name),
CONSTRAINT calendar_sources_kind_check CHECK (kind IN ('upload', 'url', 'caldav')),
CONSTRAINT calendar_sources_name_not_blank CHECK (length(btrim(name)) > 0),
CONSTRAINT calendar_sources_url_check CHECK ((kind = 'upload') = (url IS NULL)),
CONSTRAINT calendar_sources_caldav_check CHECK ((kind = 'caldav') = (password_sealed IS NOT NULL))
);
CREATE TABLE IF NOT EXISTS calendar_entries (
id uuid PRIMARY KEY DEFAULT baton_uuid7(),
user_id uuid NOT NULL,
source_id uuid NOT NULL,
uid text NOT NULL,
recurrence_id text NOT NULL DEFAULT '',
kind text NOT NULL,
title text NOT NULL,
description text,
location text,
start_at timestamptz,
end_at timestamptz,
due_at timestamptz,
all_day boolean NOT NULL DEFAULT false,
tzid text,
status text,
busy boolean NOT NULL DEFAULT true,
last_modified timestamptz,
href text,
etag text,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT calendar_entries_source_fk FOREIGN KEY (user_id, source_id)
REFERENCES calendar_sources (user_id, id) ON DELETE CASCADE,
CONSTRAINT calendar_entries_key_uq UNIQUE (source_id, uid, recurrence_id),
CONSTRAINT calendar_entries_kind_check CHECK (kind IN ('event', 'deadline')),
CONSTRAINT calendar_entries_times_check CHECK (
(kind = 'event' AND start_at IS NOT NULL AND end_at IS NOT NULL AND end_at >= start_at)
OR (kind = 'deadline' AND due_at IS NOT NULL)
)
);
CREATE INDEX IF NOT EXISTS calendar_entries_user_time_idx ON calendar_entries (user_id, coalesce(start_at, due_at));
CREATE INDEX IF NOT EXISTS calendar_entries_source_href_idx ON calendar_entries (source_id, href);
ALTER TABLE write_requests DROP CONSTRAINT IF EXISTS write_requests_action_check;
ALTER TABLE write_requests ADD CONSTRAINT write_requests_action_check
CHECK (action IN ('create', 'update', 'delete', 'feedback', 'replan', 'goal_split', 'import'));
ALTER TABLE write_requests DROP CONSTRAINT IF EXISTS write_requests_target_type_check;
ALTER TABLE write_requests ADD CONSTRAINT write_requests_target_type_check
CHECK (target_type IN ('task_item', 'long_goal', 'feedback', 'profile', 'calendar_source'));
