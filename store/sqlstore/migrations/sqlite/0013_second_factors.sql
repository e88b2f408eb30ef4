-- Second factors: a session's factors are what it has proved (the factors
-- it completed and when), which the library encodes; NULL for a session
-- that has none, as every existing session. A user's second factors are a
-- login (method 'mfa') whose material, a column since migration 12, holds
-- them.
ALTER TABLE auth_sessions ADD COLUMN factors BLOB;
