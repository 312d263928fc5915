-- 0005: the WebSocket conversation's server events, kept so that a repeated frame (the same client_message_id,
-- write decision or selection) is answered with the events it produced and runs nothing, and so that a client
-- that reconnects gets the last event. `replay_key` names the frame that produced the events; `seq` orders them.
CREATE TABLE IF NOT EXISTS conversation_events (
id bigserial PRIMARY KEY,
user_id uuid NOT NULL,
replay_key text NOT NULL,
seq integer NOT NULL,
type text NOT NULL,
payload jsonb NOT NULL,
message_id uuid,
created_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT conversation_events_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT conversation_events_key_uq UNIQUE (user_id, replay_key, seq),
CONSTRAINT conversation_events_seq_positive CHECK (seq > 0),
CONSTRAINT conversation_events_payload_object CHECK (jsonb_typeof(payload) = 'object')
);
CREATE INDEX IF NOT EXISTS conversation_events_user_recent_idx ON conversation_events (user_id, id DESC);
