-- Refresh tokens without rows. A token now names its session and its
-- generation under a MAC, so the session row holds all a refresh needs:
-- the current token's hash (current_hash, as before), how many exchanges
-- came before it (generation), the key that made it (current_key, to make
-- the same successor again inside the reuse window) and, for a session
-- that has ended, why (end_reason, NULL while it is live; the row stays
-- until the session would have expired). Existing sessions keep their
-- current token as generation 0. auth_refresh_tokens is no longer written:
-- it still places the tokens issued before, until they expire.
ALTER TABLE auth_sessions ADD COLUMN generation BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN current_key VARBINARY(64) NOT NULL DEFAULT '',
    ADD COLUMN end_reason VARBINARY(32) NULL;
DELETE t FROM auth_refresh_tokens t LEFT JOIN auth_sessions s ON s.handle = t.session_handle WHERE s.handle IS NULL;
-- Nothing finds a session by its current hash or scans by expiry on the
-- hot path any more: the indexes only cost every refresh an update of
-- each (PostgreSQL dropped them in migration 3).
ALTER TABLE auth_sessions DROP INDEX auth_sessions_current, DROP INDEX auth_sessions_expires;
