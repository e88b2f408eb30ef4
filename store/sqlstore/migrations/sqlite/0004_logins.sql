-- A user is an identity; the ways it signs in are its logins, each keyed by
-- (method, third_party, subject): one email and password login per email,
-- one third-party login per provider and provider user id. Every existing
-- user has an email and a password, so each gets its one email and password
-- login, with its hash; ids, hashes and sessions are untouched.
--
-- SQLite cannot drop a UNIQUE column, so auth_users is rebuilt, as
-- SQLite's procedure for changing a table asks: Migrate runs the step with
-- foreign key enforcement off and checks the keys before it commits.
-- Sessions, reset tokens and logins refer to auth_users by name, and find
-- the new table once it is renamed.
CREATE TABLE auth_logins (
    method         TEXT NOT NULL,
    third_party    TEXT NOT NULL DEFAULT '',
    subject        TEXT NOT NULL,
    user_id        TEXT NOT NULL REFERENCES auth_users (id),
    email          TEXT NOT NULL,
    email_verified INTEGER NOT NULL DEFAULT 0,
    password_hash  TEXT NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (method, third_party, subject)
);
CREATE INDEX auth_logins_user ON auth_logins (user_id, created_at);
CREATE INDEX auth_logins_email ON auth_logins (email);
INSERT INTO auth_logins (method, third_party, subject, user_id, email, email_verified, password_hash, created_at)
    SELECT 'emailpassword', '', email, id, email, 0, password_hash, time_joined FROM auth_users;
CREATE TABLE auth_users_new (
    id          TEXT PRIMARY KEY,
    time_joined BIGINT NOT NULL
);
INSERT INTO auth_users_new (id, time_joined) SELECT id, time_joined FROM auth_users;
DROP TABLE auth_users;
ALTER TABLE auth_users_new RENAME TO auth_users;
