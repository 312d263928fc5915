-- 0001: the TimeFlow schema of seed 002 (users, profiles, long goals, task items, conversation messages,
-- feedback, task profile snapshots, write requests, operation confirmations) with its constraints and indexes.
-- Differences from the seed, and why:
--   * no pgcrypto and no payload-hash trigger: the store computes payload_hash once at creation with the
--     built-in sha256(), so a later edit of the payload is detectable instead of silently re-hashed;
--   * the schema is the one named in config (search_path is set by the migrator), not a fixed "timeflow".
CREATE TABLE IF NOT EXISTS users (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
business_user_id text NOT NULL,
email text NOT NULL,
password_hash text NOT NULL,
display_name text,
status text NOT NULL DEFAULT 'active',
is_deleted boolean NOT NULL DEFAULT false,
deleted_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT users_business_user_id_uq UNIQUE (business_user_id),
CONSTRAINT users_email_uq UNIQUE (email),
CONSTRAINT users_status_check CHECK (status IN ('active', 'disabled')),
CONSTRAINT users_soft_delete_check CHECK (
(is_deleted = false AND deleted_at IS NULL)
OR (is_deleted = true AND deleted_at IS NOT NULL)
)
);
CREATE TABLE IF NOT EXISTS user_profiles (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
profile_data jsonb NOT NULL DEFAULT '{}'::jsonb,
version integer NOT NULL DEFAULT 1,
is_deleted boolean NOT NULL DEFAULT false,
deleted_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT user_profiles_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT user_profiles_user_id_uq UNIQUE (user_id),
CONSTRAINT user_profiles_profile_object CHECK (jsonb_typeof(profile_data) = 'object'),
CONSTRAINT user_profiles_soft_delete_check CHECK (
(is_deleted = false AND deleted_at IS NULL)
OR (is_deleted = true AND deleted_at IS NOT NULL)
)
);
CREATE TABLE IF NOT EXISTS long_goals (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
title text NOT NULL,
description text,
plan_overview text,
start_at timestamptz,
deadline_at timestamptz,
status text NOT NULL DEFAULT 'active',
version integer NOT NULL DEFAULT 1,
is_deleted boolean NOT NULL DEFAULT false,
deleted_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT long_goals_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT long_goals_user_id_uq UNIQUE (user_id, id),
CONSTRAINT long_goals_title_not_blank CHECK (length(btrim(title)) > 0),
CONSTRAINT long_goals_status_check CHECK (status IN ('active', 'completed', 'cancelled')),
CONSTRAINT long_goals_version_positive CHECK (version > 0),
CONSTRAINT long_goals_soft_delete_check CHECK (
(is_deleted = false AND deleted_at IS NULL)
OR (is_deleted = true AND deleted_at IS NOT NULL)
)
);
CREATE TABLE IF NOT EXISTS task_items (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
long_goal_id uuid,
item_type text NOT NULL,
title text NOT NULL,
description text,
start_at timestamptz,
end_at timestamptz,
due_at timestamptz,
status text NOT NULL DEFAULT 'planned',
version integer NOT NULL DEFAULT 1,
is_deleted boolean NOT NULL DEFAULT false,
deleted_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT task_items_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT task_items_user_id_uq UNIQUE (user_id, id),
CONSTRAINT task_items_goal_fk FOREIGN KEY (user_id, long_goal_id)
REFERENCES long_goals (user_id, id) ON DELETE CASCADE,
CONSTRAINT task_items_item_type_check CHECK (item_type IN ('schedule', 'todo', 'subtask')),
CONSTRAINT task_items_status_check CHECK (status IN ('planned', 'in_progress', 'completed', 'cancelled', 'deferred')),
CONSTRAINT task_items_title_not_blank CHECK (length(btrim(title)) > 0),
CONSTRAINT task_items_version_positive CHECK (version > 0),
CONSTRAINT task_items_soft_delete_check CHECK (
(is_deleted = false AND deleted_at IS NULL)
OR (is_deleted = true AND deleted_at IS NOT NULL)
),
CONSTRAINT task_items_long_goal_binding_check CHECK (
(item_type = 'subtask' AND long_goal_id IS NOT NULL)
OR (item_type IN ('schedule', 'todo') AND long_goal_id IS NULL)
)
);
CREATE TABLE IF NOT EXISTS conversation_messages (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
message_index integer NOT NULL,
role text NOT NULL,
modality text,
raw_content text NOT NULL,
source_url text,
metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
created_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT conversation_messages_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT conversation_messages_user_id_uq UNIQUE (user_id, id),
CONSTRAINT conversation_messages_index_positive CHECK (message_index > 0),
CONSTRAINT conversation_messages_user_index_uq UNIQUE (user_id, message_index),
CONSTRAINT conversation_messages_role_check CHECK (role IN ('user', 'assistant', 'system', 'tool')),
CONSTRAINT conversation_messages_modality_check CHECK (modality IS NULL OR modality IN ('text', 'voice_asr', 'image_ocr')),
CONSTRAINT conversation_messages_source_url_check CHECK (
(modality = 'text' AND source_url IS NULL)
OR (modality IN ('voice_asr', 'image_ocr') AND source_url IS NOT NULL)
OR (modality IS NULL AND source_url IS NULL)
),
CONSTRAINT conversation_messages_metadata_object CHECK (jsonb_typeof(metadata) = 'object')
);
COMMENT ON COLUMN conversation_messages.metadata IS
'扁平化 JSON 元数据，保存 schema_version、message_kind、client_message_id、question_id、question_status、question_type、expires_at、reply_to_question_id、target_agent_name、target_function_name、missing_fields、parsed_params、time_range、write_request_id、decision 等固定键。';
CREATE TABLE IF NOT EXISTS feedback_records (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
task_item_id uuid NOT NULL,
source_message_id uuid,
feedback_status text NOT NULL,
normalized_feedback text NOT NULL,
duration_minutes integer,
occurred_at timestamptz NOT NULL,
is_deleted boolean NOT NULL DEFAULT false,
deleted_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT feedback_records_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT feedback_records_user_id_uq UNIQUE (user_id, id),
CONSTRAINT feedback_records_task_fk FOREIGN KEY (user_id, task_item_id)
REFERENCES task_items (user_id, id) ON DELETE RESTRICT,
CONSTRAINT feedback_records_message_fk FOREIGN KEY (user_id, source_message_id)
REFERENCES conversation_messages (user_id, id) ON DELETE SET NULL,
CONSTRAINT feedback_records_status_check CHECK (
feedback_status IN ('completed', 'not_completed', 'partially_completed', 'deferred', 'cancelled')
),
CONSTRAINT feedback_records_duration_check CHECK (duration_minutes IS NULL OR duration_minutes >= 0),
CONSTRAINT feedback_records_soft_delete_check CHECK (
(is_deleted = false AND deleted_at IS NULL)
OR (is_deleted = true AND deleted_at IS NOT NULL)
)
);
CREATE TABLE IF NOT EXISTS task_profile_snapshots (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
long_goal_id uuid NOT NULL,
profile_summary text NOT NULL,
source_message_id uuid NOT NULL,
version integer NOT NULL DEFAULT 1,
is_deleted boolean NOT NULL DEFAULT false,
deleted_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT task_profile_snapshots_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT task_profile_snapshots_user_goal_uq UNIQUE (user_id, long_goal_id),
CONSTRAINT task_profile_snapshots_goal_fk FOREIGN KEY (user_id, long_goal_id)
REFERENCES long_goals (user_id, id) ON DELETE RESTRICT,
CONSTRAINT task_profile_snapshots_message_fk FOREIGN KEY (user_id, source_message_id)
REFERENCES conversation_messages (user_id, id) ON DELETE RESTRICT,
CONSTRAINT task_profile_snapshots_version_positive CHECK (version > 0),
CONSTRAINT task_profile_snapshots_soft_delete_check CHECK (
(is_deleted = false AND deleted_at IS NULL)
OR (is_deleted = true AND deleted_at IS NOT NULL)
)
);
CREATE TABLE IF NOT EXISTS write_requests (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
source_message_id uuid,
action text NOT NULL,
target_type text NOT NULL,
target_id uuid,
payload jsonb NOT NULL DEFAULT '{}'::jsonb,
payload_hash text NOT NULL DEFAULT '',
preview_text text NOT NULL,
status text NOT NULL DEFAULT 'pending',
idempotency_key text NOT NULL,
base_version integer,
expires_at timestamptz,
created_at timestamptz NOT NULL DEFAULT now(),
updated_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT write_requests_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT write_requests_user_id_uq UNIQUE (user_id, id),
CONSTRAINT write_requests_message_fk FOREIGN KEY (user_id, source_message_id)
REFERENCES conversation_messages (user_id, id) ON DELETE SET NULL,
CONSTRAINT write_requests_action_check CHECK (action IN ('create', 'update', 'delete', 'feedback', 'replan', 'goal_split')),
CONSTRAINT write_requests_target_type_check CHECK (target_type IN ('task_item', 'long_goal', 'feedback', 'profile')),
CONSTRAINT write_requests_payload_object CHECK (jsonb_typeof(payload) IN ('object', 'array')),
CONSTRAINT write_requests_preview_not_blank CHECK (length(btrim(preview_text)) > 0),
CONSTRAINT write_requests_status_check CHECK (status IN ('pending', 'confirmed', 'rejected', 'applied', 'expired')),
CONSTRAINT write_requests_idempotency_not_blank CHECK (length(btrim(idempotency_key)) > 0),
CONSTRAINT write_requests_base_version_positive CHECK (base_version IS NULL OR base_version > 0)
);
CREATE UNIQUE INDEX IF NOT EXISTS write_requests_user_idempotency_uq
ON write_requests (user_id, idempotency_key);
CREATE TABLE IF NOT EXISTS operation_confirmations (
id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
user_id uuid NOT NULL,
write_request_id uuid NOT NULL,
decision text NOT NULL,
idempotency_key text NOT NULL,
created_at timestamptz NOT NULL DEFAULT now(),
CONSTRAINT operation_confirmations_user_fk FOREIGN KEY (user_id)
REFERENCES users (id) ON DELETE CASCADE,
CONSTRAINT operation_confirmations_user_id_uq UNIQUE (user_id, id),
CONSTRAINT operation_confirmations_request_fk FOREIGN KEY (user_id, write_request_id)
REFERENCES write_requests (user_id, id) ON DELETE RESTRICT,
CONSTRAINT operation_confirmations_decision_check CHECK (decision IN ('confirmed', 'rejected')),
CONSTRAINT operation_confirmations_idempotency_not_blank CHECK (length(btrim(idempotency_key)) > 0),
CONSTRAINT operation_confirmations_user_request_uq UNIQUE (user_id, write_request_id)
);
-- -----------------------------
-- Indexes
-- -----------------------------
CREATE INDEX IF NOT EXISTS user_profiles_user_idx
ON user_profiles (user_id);
CREATE INDEX IF NOT EXISTS long_goals_user_status_idx
ON long_goals (user_id, status, updated_at DESC);
CREATE INDEX IF NOT EXISTS task_items_user_time_idx
ON task_items (user_id, start_at, end_at);
CREATE INDEX IF NOT EXISTS task_items_user_type_status_idx
ON task_items (user_id, item_type, status, updated_at DESC);
CREATE INDEX IF NOT EXISTS task_items_goal_idx
ON task_items (user_id, long_goal_id, due_at);
CREATE INDEX IF NOT EXISTS conversation_messages_window_idx
ON conversation_messages (user_id, message_index DESC);
CREATE INDEX IF NOT EXISTS conversation_messages_kind_idx
ON conversation_messages (user_id, ((metadata->>'message_kind')), created_at DESC);
CREATE UNIQUE INDEX IF NOT EXISTS conversation_messages_client_message_uq
ON conversation_messages (user_id, ((metadata->>'client_message_id')))
WHERE (metadata->>'client_message_id') IS NOT NULL;
CREATE INDEX IF NOT EXISTS conversation_messages_question_idx
ON conversation_messages (user_id, ((metadata->>'question_id')))
WHERE (metadata->>'question_id') IS NOT NULL;
CREATE INDEX IF NOT EXISTS conversation_messages_reply_question_idx
ON conversation_messages (user_id, ((metadata->>'reply_to_question_id')))
WHERE (metadata->>'reply_to_question_id') IS NOT NULL;
CREATE INDEX IF NOT EXISTS conversation_messages_question_status_idx
ON conversation_messages (user_id, ((metadata->>'question_status')), created_at DESC)
WHERE (metadata->>'question_status') IS NOT NULL;
CREATE INDEX IF NOT EXISTS feedback_records_user_time_idx
ON feedback_records (user_id, occurred_at DESC);
CREATE INDEX IF NOT EXISTS task_profile_snapshots_goal_time_idx
ON task_profile_snapshots (user_id, long_goal_id, updated_at DESC);
CREATE INDEX IF NOT EXISTS write_requests_user_status_idx
ON write_requests (user_id, status, created_at DESC);
CREATE INDEX IF NOT EXISTS operation_confirmations_user_time_idx
ON operation_confirmations (user_id, created_at DESC);
