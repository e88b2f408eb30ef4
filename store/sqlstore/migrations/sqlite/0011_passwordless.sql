-- Passwordless sign-in: a flow and the codes sent for it are rows of
-- auth_codes. A flow belongs to no user, so user_id may be NULL; a code
-- names its flow by hash (flow), and a flow counts the wrong codes
-- submitted to it (attempts). Codes are found by their flow, and flows by
-- their address, which a code carries too. Existing rows are reset and
-- verification tokens, with no flow and no attempts.
--
-- SQLite cannot drop NOT NULL, so auth_codes is rebuilt, as SQLite's
-- procedure for changing a table asks (Migrate runs the step with foreign
-- key enforcement off and checks the keys before it commits), keeping
-- every row and index; no table refers to it.
CREATE TABLE auth_codes_new (
    hash       BLOB PRIMARY KEY,
    kind       TEXT NOT NULL,
    user_id    TEXT REFERENCES auth_users (id),
    login_id   TEXT NOT NULL DEFAULT '',
    email      TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    flow       BLOB,
    attempts   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO auth_codes_new (hash, kind, user_id, login_id, email, created_at, expires_at)
    SELECT hash, kind, user_id, login_id, email, created_at, expires_at FROM auth_codes;
DROP TABLE auth_codes;
ALTER TABLE auth_codes_new RENAME TO auth_codes;
CREATE INDEX auth_codes_user ON auth_codes (user_id, kind);
CREATE INDEX auth_codes_login ON auth_codes (login_id);
CREATE INDEX auth_codes_expires ON auth_codes (expires_at);
CREATE INDEX auth_codes_flow ON auth_codes (flow);
CREATE INDEX auth_codes_flows ON auth_codes (kind, email);
