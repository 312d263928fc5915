-- 0006: semantic memory. A user message's vector (the turn's own encoder pass, L2-normalised) kept beside the
-- message, so the LLM planner's prompt can recall the user's earlier messages that resemble this turn without a
-- second encoder pass. A message without a vector (the encoder was late, a voice turn) is simply not recalled.
CREATE TABLE IF NOT EXISTS message_vectors (
message_id uuid PRIMARY KEY,
user_id uuid NOT NULL,
vector real[] NOT NULL,
created_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT message_vectors_message_fk FOREIGN KEY (user_id, message_id)
REFERENCES conversation_messages (user_id, id) ON DELETE CASCADE,
CONSTRAINT message_vectors_not_empty CHECK (cardinality(vector) > 0)
);
CREATE INDEX IF NOT EXISTS message_vectors_user_recent_idx ON message_vectors (user_id, created_at DESC);
