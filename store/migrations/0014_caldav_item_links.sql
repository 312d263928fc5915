-- 0014: which CalDAV object holds each task item pushed to a linked calendar: its href and ETag on the server, the
-- item version last pushed, and the server's last modification seen, so a sync pushes only what changed, notices an
-- edit or a deletion on the server, and resolves a conflict by the later modification.
CREATE TABLE IF NOT EXISTS calendar_item_links (
user_id uuid NOT NULL,
source_id uuid NOT NULL,
task_item_id uuid NOT NULL,
href text NOT NULL,
etag text,
pushed_version integer NOT NULL,
pushed_at timestamptz NOT NULL DEFAULT now(),
PRIMARY KEY (source_id, task_item_id),
CONSTRAINT calendar_item_links_source_fk FOREIGN KEY (user_id, source_id)
REFERENCES calendar_sources (user_id, id) ON DELETE CASCADE,
CONSTRAINT calendar_item_links_item_fk FOREIGN KEY (user_id, task_item_id)
REFERENCES task_items (user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS calendar_item_links_href_idx ON calendar_item_links (source_id, href);
