-- A user is an identity; the ways it signs in are its logins, each keyed by
-- (method, third_party, subject): one email and password login per email,
-- one third-party login per provider and provider user id. Every existing
-- user has an email and a password, so each gets its one email and password
-- login, with its hash; ids, hashes and sessions are untouched.
CREATE TABLE auth_logins (
    method         VARBINARY(32) NOT NULL,
    third_party    VARBINARY(64) NOT NULL DEFAULT '',
    subject        VARBINARY(320) NOT NULL,
    user_id        VARBINARY(64) NOT NULL,
    email          VARBINARY(320) NOT NULL,
    email_verified BOOLEAN NOT NULL DEFAULT FALSE,
    password_hash  VARBINARY(1024) NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (method, third_party, subject),
    KEY auth_logins_user (user_id, created_at),
    KEY auth_logins_email (email),
    CONSTRAINT auth_logins_user_fk FOREIGN KEY (user_id) REFERENCES auth_users (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
INSERT INTO auth_logins (method, third_party, subject, user_id, email, email_verified, password_hash, created_at)
    SELECT 'emailpassword', '', email, id, email, FALSE, password_hash, time_joined FROM auth_users;
ALTER TABLE auth_users DROP INDEX auth_users_email, DROP COLUMN email, DROP COLUMN password_hash;
