-- A user's session epoch counts the times every session of the user was
-- ended (a password reset, revoking all sessions). A session is created
-- only under the epoch read with the credential that authorised it, so a
-- sign-in in flight across a reset cannot start a session after it.
ALTER TABLE auth_users ADD COLUMN session_epoch BIGINT NOT NULL DEFAULT 0;
