-- Rate-limit state shared by every instance: one time per key, the
-- "theoretical arrival time" of the generic cell rate algorithm.
CREATE TABLE auth_rate_limits (
    limit_key VARBINARY(64) NOT NULL PRIMARY KEY,
    tat       BIGINT NOT NULL,
    KEY auth_rate_limits_tat (tat)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
