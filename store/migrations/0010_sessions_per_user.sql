-- 0010: sessions belong to their user. A session id is the client's choice, so it is unique per user, not across
-- users: another user's session of the same id is simply not the caller's (a new session of the caller's own),
-- never a refusal that says it exists. The lease and commit statements find a session by (user, id).
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_pkey;
ALTER TABLE sessions ADD CONSTRAINT sessions_pkey PRIMARY KEY (user_id, id);
DROP FUNCTION IF EXISTS baton_begin_turn(text, uuid, uuid, double precision, double precision, boolean);
CREATE FUNCTION baton_begin_turn(p_session text, p_user uuid, p_token uuid, p_lease_s double precision,
                                 p_ttl_s double precision, p_create boolean)
RETURNS TABLE (leased boolean, owner uuid, state jsonb, version integer, fresh boolean, question jsonb,
               world jsonb, world_version integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_state jsonb; v_version integer; v_idle boolean; v_created boolean;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);  -- until this statement's transaction ends
  UPDATE conversation_messages m SET metadata = jsonb_set(m.metadata, '{question_status}', '"expired"')
   WHERE m.user_id = p_user AND m.metadata->>'question_status' = 'open'
     AND (m.metadata->>'expires_at')::timestamptz < now();
  IF p_create THEN
    INSERT INTO sessions AS s (id, user_id, lease_token, lease_until)
    VALUES (p_session, p_user, p_token, now() + make_interval(secs => p_lease_s))
    ON CONFLICT (user_id, id) DO UPDATE SET lease_token = EXCLUDED.lease_token, lease_until = EXCLUDED.lease_until
     WHERE s.lease_until IS NULL OR s.lease_until < now()
    RETURNING s.state, s.version, (now() - s.updated_at) > make_interval(secs => p_ttl_s), (s.xmax = 0)
      INTO v_state, v_version, v_idle, v_created;
  ELSE
    UPDATE sessions s SET lease_token = p_token, lease_until = now() + make_interval(secs => p_lease_s)
     WHERE s.id = p_session AND s.user_id = p_user AND (s.lease_until IS NULL OR s.lease_until < now())
    RETURNING s.state, s.version, (now() - s.updated_at) > make_interval(secs => p_ttl_s), false
      INTO v_state, v_version, v_idle, v_created;
  END IF;
  IF v_version IS NULL THEN
    RETURN QUERY SELECT false, (SELECT s.user_id FROM sessions s WHERE s.user_id = p_user AND s.id = p_session), NULL::jsonb, NULL::integer,
                        NULL::boolean, NULL::jsonb, NULL::jsonb, NULL::integer;
    RETURN;
  END IF;
  RETURN QUERY SELECT true, p_user, v_state, v_version, (v_created OR v_idle OR v_state = '{}'::jsonb),
    (SELECT to_jsonb(q) FROM (
       SELECT m.id, m.user_id, m.message_index, m.role, m.modality, m.raw_content, m.source_url, m.metadata, m.created_at
         FROM conversation_messages m
        WHERE m.user_id = p_user AND m.metadata->>'question_status' = 'open'
          AND (m.metadata->>'expires_at')::timestamptz >= now() AND m.metadata->>'session_id' = p_session
        ORDER BY m.message_index DESC LIMIT 1) q),
    w.state, coalesce(w.version, 0)
    FROM (SELECT 1) one LEFT JOIN plugin_state w ON w.user_id = p_user;
END
$$;

CREATE OR REPLACE FUNCTION baton_commit_turn(
  p_user uuid, p_session text, p_token uuid, p_version integer, p_state jsonb,
  p_world jsonb, p_world_version integer, p_question uuid,
  p_in_id uuid, p_in_modality text, p_in_raw text, p_in_source text, p_in_meta jsonb,
  p_out_id uuid, p_out_raw text, p_out_meta jsonb,
  p_client_message_id text, p_response jsonb)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_version integer := 0; v_index integer;
BEGIN
  IF p_token IS NOT NULL THEN
    UPDATE sessions SET state = p_state, version = version + 1, lease_token = NULL, lease_until = NULL, updated_at = now()
     WHERE user_id = p_user AND id = p_session AND lease_token = p_token AND version = p_version
    RETURNING version INTO v_version;
    IF v_version IS NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'BT001', MESSAGE = 'the session lease lapsed and another turn took the session';
    END IF;
  END IF;
  IF p_world IS NOT NULL THEN
    IF p_world_version = 0 THEN
      INSERT INTO plugin_state (user_id, state, version) VALUES (p_user, p_world, 1) ON CONFLICT (user_id) DO NOTHING;
    ELSE
      UPDATE plugin_state SET state = p_world, version = version + 1, updated_at = now()
       WHERE user_id = p_user AND version = p_world_version;
    END IF;
    IF NOT FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'BT002', MESSAGE = 'another turn changed this user''s world';
    END IF;
  END IF;
  IF p_question IS NOT NULL THEN
    UPDATE conversation_messages SET metadata = jsonb_set(metadata, '{question_status}', '"answered"')
     WHERE user_id = p_user AND id = p_question AND metadata->>'message_kind' = 'clarification_question'
       AND metadata->>'question_status' = 'open';
  END IF;
  INSERT INTO conversation_counters AS c (user_id, last_index) VALUES (p_user, 2)
  ON CONFLICT (user_id) DO UPDATE SET last_index = c.last_index + 2
  RETURNING c.last_index INTO v_index;
  INSERT INTO conversation_messages (id, user_id, message_index, role, modality, raw_content, source_url, metadata)
  VALUES (p_in_id, p_user, v_index - 1, 'user', p_in_modality, p_in_raw, p_in_source, p_in_meta),
         (p_out_id, p_user, v_index, 'assistant', NULL, p_out_raw, NULL, p_out_meta);
  INSERT INTO chat_turns (user_id, client_message_id, session_id, input_message_id, response)
  VALUES (p_user, p_client_message_id, p_session, p_in_id, p_response);
  RETURN v_version;
END
$$;
