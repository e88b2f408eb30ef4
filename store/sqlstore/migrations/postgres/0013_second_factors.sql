-- Second factors: a session's factors are what it has proved (the factors
-- it completed and when), which the library encodes; NULL for a session
-- that has none, as every existing session. Nothing finds a session by
-- them, so the column is not indexed and an update of it, like a refresh,
-- stays in place on its page. A user's second factors are a login
-- (method 'mfa') whose material, a column since migration 12, holds them.
ALTER TABLE auth_sessions ADD COLUMN factors BYTEA;
