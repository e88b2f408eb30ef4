-- Rate-limit state shared by every instance: one time per key, the
-- "theoretical arrival time" of the generic cell rate algorithm.
CREATE TABLE auth_rate_limits (
    limit_key TEXT PRIMARY KEY,
    tat       BIGINT NOT NULL
);
CREATE INDEX auth_rate_limits_tat ON auth_rate_limits (tat);
