-- Email verification and account linking. A login gets an id of its own
-- (the SDKs' recipeUserId): every existing user has exactly one login, so
-- it takes its user's id. owned_email is the login's email while the login
-- owns it for account linking, NULL otherwise; the unique index lets one
-- login own an email. A session records the login it was started with:
-- existing ones, their user's only login. Verification tokens are bound to
-- a login and the email they were sent to.
ALTER TABLE auth_logins ADD COLUMN id TEXT NOT NULL DEFAULT '';
UPDATE auth_logins SET id = user_id;
CREATE UNIQUE INDEX auth_logins_id ON auth_logins (id);
ALTER TABLE auth_logins ADD COLUMN owned_email TEXT;
CREATE UNIQUE INDEX auth_logins_owned_email ON auth_logins (owned_email);
ALTER TABLE auth_sessions ADD COLUMN login_id TEXT NOT NULL DEFAULT '';
UPDATE auth_sessions SET login_id = user_id;
CREATE TABLE auth_verification_tokens (
    hash       BLOB PRIMARY KEY,
    login_id   TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES auth_users (id),
    email      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX auth_verification_tokens_login ON auth_verification_tokens (login_id);
CREATE INDEX auth_verification_tokens_user ON auth_verification_tokens (user_id);
CREATE INDEX auth_verification_tokens_expires ON auth_verification_tokens (expires_at);
