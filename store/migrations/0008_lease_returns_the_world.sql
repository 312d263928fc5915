-- 0008: the lease statement also returns the user's world (car and order book), so a turn that runs a plugin
-- needs no read of its own after routing; and it no longer waits for the WAL flush. A lease is a soft lock held
-- for seconds: one lost in a crash only lets the next turn lease the session at once, and the turn that held it
-- had not committed (its commit, synchronous, flushes every record before its own). Questions it expired are
-- expired again by the next turn, and a session row it created is created again.
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
    ON CONFLICT (id) DO UPDATE SET lease_token = EXCLUDED.lease_token, lease_until = EXCLUDED.lease_until
     WHERE s.user_id = EXCLUDED.user_id AND (s.lease_until IS NULL OR s.lease_until < now())
    RETURNING s.state, s.version, (now() - s.updated_at) > make_interval(secs => p_ttl_s), (s.xmax = 0)
      INTO v_state, v_version, v_idle, v_created;
  ELSE
    UPDATE sessions s SET lease_token = p_token, lease_until = now() + make_interval(secs => p_lease_s)
     WHERE s.id = p_session AND s.user_id = p_user AND (s.lease_until IS NULL OR s.lease_until < now())
    RETURNING s.state, s.version, (now() - s.updated_at) > make_interval(secs => p_ttl_s), false
      INTO v_state, v_version, v_idle, v_created;
  END IF;
  IF v_version IS NULL THEN
    RETURN QUERY SELECT false, (SELECT s.user_id FROM sessions s WHERE s.id = p_session), NULL::jsonb, NULL::integer,
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
