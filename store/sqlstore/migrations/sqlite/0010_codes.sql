-- One table for one-time codes: reset and verification tokens move into
-- auth_codes, told apart by kind, so that the kinds to come (passwordless
-- codes, WebAuthn ceremonies) add rows and columns rather than tables.
-- Every live token keeps working.
CREATE TABLE auth_codes (
    hash       BLOB PRIMARY KEY,
    kind       TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES auth_users (id),
    login_id   TEXT NOT NULL DEFAULT '',
    email      TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX auth_codes_user ON auth_codes (user_id, kind);
CREATE INDEX auth_codes_login ON auth_codes (login_id);
CREATE INDEX auth_codes_expires ON auth_codes (expires_at);
INSERT INTO auth_codes (hash, kind, user_id, created_at, expires_at)
    SELECT hash, 'reset', user_id, created_at, expires_at FROM auth_reset_tokens;
INSERT INTO auth_codes (hash, kind, user_id, login_id, email, created_at, expires_at)
    SELECT hash, 'verification', user_id, login_id, email, created_at, expires_at FROM auth_verification_tokens;
DROP TABLE auth_reset_tokens;
DROP TABLE auth_verification_tokens;
