-- 0002: Baton's own tables next to seed 002's: turn-state sessions (optimistic version + a short lease so
-- two replicas never run the same conversation's turn at once) and the stored reply of every chat turn
-- that carried a client_message_id (a repeat returns it and runs nothing again). Also the metadata
-- consistency rules of seed 002 that a CHECK can express.
CREATE TABLE IF NOT EXISTS sessions (
id text PRIMARY KEY,
user_id uuid NOT NULL,
state jsonb NOT NULL DEFAULT '{}'::jsonb,
version integer NOT NULL DEFAULT 1,
lease_token uuid,
lease_until timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT sessions_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT sessions_state_object CHECK (jsonb_typeof(state) = 'object'),
CONSTRAINT sessions_version_positive CHECK (version > 0),
CONSTRAINT sessions_lease_pair CHECK ((lease_token IS NULL) = (lease_until IS NULL))
);
CREATE INDEX IF NOT EXISTS sessions_user_idx ON sessions (user_id, updated_at DESC);

CREATE TABLE IF NOT EXISTS chat_turns (
user_id uuid NOT NULL,
client_message_id text NOT NULL,
session_id text NOT NULL,
input_message_id uuid NOT NULL,
response jsonb NOT NULL,
created_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT chat_turns_pk PRIMARY KEY (user_id, client_message_id),
CONSTRAINT chat_turns_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT chat_turns_message_fk FOREIGN KEY (user_id, input_message_id)
REFERENCES conversation_messages (user_id, id) ON DELETE CASCADE,
CONSTRAINT chat_turns_response_object CHECK (jsonb_typeof(response) = 'object')
);

ALTER TABLE conversation_messages DROP CONSTRAINT IF EXISTS conversation_messages_metadata_rules;
ALTER TABLE conversation_messages ADD CONSTRAINT conversation_messages_metadata_rules CHECK (
(metadata->>'schema_version') = '1'
AND (metadata->>'message_kind') IN ('input', 'clarification_question', 'clarification_answer', 'decision',
  'execution_processing', 'selection_required', 'selection_submit', 'selection_cancel', 'execution_result',
  'confirmation_request', 'confirmation_decision', 'system_notice', 'error')
AND ((metadata->>'message_kind') NOT IN ('input', 'clarification_answer') OR (metadata->>'client_message_id') IS NOT NULL)
AND ((metadata->>'message_kind') <> 'clarification_question' OR (
  (metadata->>'question_id') = id::text
  AND (metadata->>'question_status') IN ('open', 'answered', 'expired')
  AND (metadata->>'expires_at') IS NOT NULL))
AND ((metadata->>'message_kind') <> 'clarification_answer' OR (metadata->>'reply_to_question_id') IS NOT NULL)
);
