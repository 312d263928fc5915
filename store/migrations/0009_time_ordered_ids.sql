-- 0009: rows the database names itself get time-ordered ids (UUID version 7), as the ones Baton names do
-- (store/ids.py says why: a random key dirties a random index leaf of a large table, and its first change after a
-- checkpoint writes the whole page to the WAL the commit waits for). Existing rows keep their ids. Built from
-- gen_random_uuid() rather than PostgreSQL 18's uuidv7(), so a DATABASE_URL on an older server works too.
CREATE OR REPLACE FUNCTION baton_uuid7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  -- the first 6 bytes: Unix time in ms; then the version nibble 0100 → 0111 (bits 52, 53 of byte 6)
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING
           substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
         52, 1), 53, 1), 'hex')::uuid
$$;
ALTER TABLE users ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE user_profiles ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE long_goals ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE task_items ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE conversation_messages ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE feedback_records ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE task_profile_snapshots ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE write_requests ALTER COLUMN id SET DEFAULT baton_uuid7();
ALTER TABLE operation_confirmations ALTER COLUMN id SET DEFAULT baton_uuid7();
