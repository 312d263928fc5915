-- 0003: the simulated cabin and order book of each user (the plugins' backends), one row per user, saved
-- with an optimistic version in the same transaction as the turn that changed it.
CREATE TABLE IF NOT EXISTS plugin_state (
user_id uuid PRIMARY KEY,
state jsonb NOT NULL,
version integer NOT NULL,
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT plugin_state_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT plugin_state_object CHECK (jsonb_typeof(state) = 'object'),
CONSTRAINT plugin_state_version_positive CHECK (version > 0)
);
