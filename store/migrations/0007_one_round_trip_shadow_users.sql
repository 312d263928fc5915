-- 0007: the user behind a token-less local chat in one round trip, inside the turn's auth budget. A known user is
-- one index read. A new one is inserted, optionally without waiting for the WAL flush (store/users.py says why),
-- and yields on a conflict with any unique index: a racing first use of the same id (which also conflicts on the
-- email, an index an ON CONFLICT naming one column would not arbitrate) then reads the row its rival committed.
CREATE OR REPLACE FUNCTION baton_shadow_user(p_business text, p_email text, p_password text, p_name text,
                                             p_async boolean)
RETURNS TABLE (id uuid, business_user_id text, email text, password_hash text, display_name text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT u.id, u.business_user_id, u.email, u.password_hash, u.display_name
                 FROM users u WHERE u.business_user_id = p_business;
  IF FOUND THEN
    RETURN;
  END IF;
  IF p_async THEN
    PERFORM set_config('synchronous_commit', 'off', true);  -- until this statement's transaction ends
  END IF;
  RETURN QUERY INSERT INTO users AS u (business_user_id, email, password_hash, display_name)
               VALUES (p_business, p_email, p_password, p_name) ON CONFLICT DO NOTHING
               RETURNING u.id, u.business_user_id, u.email, u.password_hash, u.display_name;
  IF FOUND THEN
    RETURN;
  END IF;
  -- the insert yielded to a rival that has committed (it waited for that): a new statement sees its row
  RETURN QUERY SELECT u.id, u.business_user_id, u.email, u.password_hash, u.display_name
                 FROM users u WHERE u.business_user_id = p_business;
END
$$;
