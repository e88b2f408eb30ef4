-- Email verification and account linking. A login gets an id of its own
-- (the SDKs' recipeUserId): every existing user has exactly one login, so
-- it takes its user's id. owned_email is the login's email while the login
-- owns it for account linking, NULL otherwise; the unique index lets one
-- login own an email. A session records the login it was started with:
-- existing ones, their user's only login. Verification tokens are bound to
-- a login and the email they were sent to.
ALTER TABLE auth_logins ADD COLUMN id VARBINARY(64) NOT NULL DEFAULT '',
    ADD COLUMN owned_email VARBINARY(320) NULL;
UPDATE auth_logins SET id = user_id;
ALTER TABLE auth_logins ADD UNIQUE KEY auth_logins_id (id), ADD UNIQUE KEY auth_logins_owned_email (owned_email);
ALTER TABLE auth_sessions ADD COLUMN login_id VARBINARY(64) NOT NULL DEFAULT '';
UPDATE auth_sessions SET login_id = user_id;
CREATE TABLE auth_verification_tokens (
    hash       BINARY(32) NOT NULL PRIMARY KEY,
    login_id   VARBINARY(64) NOT NULL,
    user_id    VARBINARY(64) NOT NULL,
    email      VARBINARY(320) NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    KEY auth_verification_tokens_login (login_id),
    KEY auth_verification_tokens_user (user_id),
    KEY auth_verification_tokens_expires (expires_at),
    CONSTRAINT auth_verification_tokens_user_fk FOREIGN KEY (user_id) REFERENCES auth_users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
