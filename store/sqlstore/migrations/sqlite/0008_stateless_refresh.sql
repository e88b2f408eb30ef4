-- Refresh tokens without rows. A token now names its session and its
-- generation under a MAC, so the session row holds all a refresh needs:
-- the current token's hash (current_hash, as before), how many exchanges
-- came before it (generation), the key that made it (current_key, to make
-- the same successor again inside the reuse window) and, for a session
-- that has ended, why (end_reason, NULL while it is live; the row stays
-- until the session would have expired). Existing sessions keep their
-- current token as generation 0. auth_refresh_tokens is no longer written:
-- it still places the tokens issued before, until they expire.
ALTER TABLE auth_sessions ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE auth_sessions ADD COLUMN current_key TEXT NOT NULL DEFAULT '';
ALTER TABLE auth_sessions ADD COLUMN end_reason TEXT;
DELETE FROM auth_refresh_tokens WHERE session_handle NOT IN (SELECT handle FROM auth_sessions);
