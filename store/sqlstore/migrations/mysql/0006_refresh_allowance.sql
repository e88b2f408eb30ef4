-- A session's rotation allowance: the time of its token bucket (Burst
-- rotations at once, then one per interval), in milliseconds, as
-- auth_rate_limits keeps one. One column, so the bound costs the same
-- whatever the session's history, and rotation updates it in the statement
-- that rotates.
ALTER TABLE auth_sessions ADD COLUMN refresh_allowance BIGINT NOT NULL DEFAULT 0;
