-- Times are milliseconds since the Unix epoch; hashes are SHA-256 digests.
CREATE TABLE auth_users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL DEFAULT '',
    time_joined   BIGINT NOT NULL
);

CREATE TABLE auth_sessions (
    handle        TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES auth_users (id),
    created_at    BIGINT NOT NULL,
    refreshed_at  BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    current_hash  BYTEA NOT NULL UNIQUE,
    previous_hash BYTEA,
    superseded_at BIGINT
);
CREATE INDEX auth_sessions_user ON auth_sessions (user_id, created_at);
CREATE INDEX auth_sessions_expires ON auth_sessions (expires_at);

CREATE TABLE auth_refresh_tokens (
    hash           BYTEA PRIMARY KEY,
    session_handle TEXT NOT NULL REFERENCES auth_sessions (handle),
    expires_at     BIGINT NOT NULL
);
CREATE INDEX auth_refresh_tokens_session ON auth_refresh_tokens (session_handle);
CREATE INDEX auth_refresh_tokens_expires ON auth_refresh_tokens (expires_at);

CREATE TABLE auth_reset_tokens (
    hash       BYTEA PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES auth_users (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX auth_reset_tokens_user ON auth_reset_tokens (user_id);
CREATE INDEX auth_reset_tokens_expires ON auth_reset_tokens (expires_at);

CREATE TABLE auth_signing_keys (
    id           TEXT PRIMARY KEY,
    algorithm    TEXT NOT NULL,
    material     BYTEA NOT NULL,
    created_at   BIGINT NOT NULL,
    sign_until   BIGINT NOT NULL,
    verify_until BIGINT NOT NULL
);
CREATE INDEX auth_signing_keys_verify_until ON auth_signing_keys (verify_until);
