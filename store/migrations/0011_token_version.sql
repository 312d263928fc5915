-- 0010: a token version per account: access tokens carry the version they were issued under, and a password change
-- bumps it, so every token issued before the change is refused (serve_app/auth.py).
ALTER TABLE users ADD COLUMN IF NOT EXISTS token_version integer NOT NULL DEFAULT 0;
