-- Times are milliseconds since the Unix epoch; hashes are SHA-256 digests.
-- Keys are VARBINARY: they compare byte for byte, trailing spaces
-- included, as the Store contract asks (binary collations pad spaces).
CREATE TABLE auth_users (
    id            VARBINARY(64) NOT NULL PRIMARY KEY,
    email         VARBINARY(320) NOT NULL,
    password_hash VARBINARY(1024) NOT NULL DEFAULT '',
    time_joined   BIGINT NOT NULL,
    UNIQUE KEY auth_users_email (email)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_sessions (
    handle        VARBINARY(64) NOT NULL PRIMARY KEY,
    user_id       VARBINARY(64) NOT NULL,
    created_at    BIGINT NOT NULL,
    refreshed_at  BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    current_hash  BINARY(32) NOT NULL,
    previous_hash BINARY(32) NULL,
    superseded_at BIGINT NULL,
    UNIQUE KEY auth_sessions_current (current_hash),
    KEY auth_sessions_user (user_id, created_at),
    KEY auth_sessions_expires (expires_at),
    CONSTRAINT auth_sessions_user_fk FOREIGN KEY (user_id) REFERENCES auth_users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_refresh_tokens (
    hash           BINARY(32) NOT NULL PRIMARY KEY,
    session_handle VARBINARY(64) NOT NULL,
    expires_at     BIGINT NOT NULL,
    KEY auth_refresh_tokens_session (session_handle),
    KEY auth_refresh_tokens_expires (expires_at),
    CONSTRAINT auth_refresh_tokens_session_fk FOREIGN KEY (session_handle) REFERENCES auth_sessions (handle)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_reset_tokens (
    hash       BINARY(32) NOT NULL PRIMARY KEY,
    user_id    VARBINARY(64) NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    KEY auth_reset_tokens_user (user_id),
    KEY auth_reset_tokens_expires (expires_at),
    CONSTRAINT auth_reset_tokens_user_fk FOREIGN KEY (user_id) REFERENCES auth_users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_signing_keys (
    id           VARBINARY(64) NOT NULL PRIMARY KEY,
    algorithm    VARBINARY(16) NOT NULL,
    material     VARBINARY(256) NOT NULL,
    created_at   BIGINT NOT NULL,
    sign_until   BIGINT NOT NULL,
    verify_until BIGINT NOT NULL,
    KEY auth_signing_keys_verify_until (verify_until)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
