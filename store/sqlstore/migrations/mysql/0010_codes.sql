-- One table for one-time codes: reset and verification tokens move into
-- auth_codes, told apart by kind, so that the kinds to come (passwordless
-- codes, WebAuthn ceremonies) add rows and columns rather than tables.
-- Every live token keeps working.
CREATE TABLE auth_codes (
    hash       BINARY(32) NOT NULL PRIMARY KEY,
    kind       VARBINARY(32) NOT NULL,
    user_id    VARBINARY(64) NOT NULL,
    login_id   VARBINARY(64) NOT NULL DEFAULT '',
    email      VARBINARY(320) NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    KEY auth_codes_user (user_id, kind),
    KEY auth_codes_login (login_id),
    KEY auth_codes_expires (expires_at),
    CONSTRAINT auth_codes_user_fk FOREIGN KEY (user_id) REFERENCES auth_users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
INSERT INTO auth_codes (hash, kind, user_id, created_at, expires_at)
    SELECT hash, 'reset', user_id, created_at, expires_at FROM auth_reset_tokens;
INSERT INTO auth_codes (hash, kind, user_id, login_id, email, created_at, expires_at)
    SELECT hash, 'verification', user_id, login_id, email, created_at, expires_at FROM auth_verification_tokens;
DROP TABLE auth_reset_tokens;
DROP TABLE auth_verification_tokens;
