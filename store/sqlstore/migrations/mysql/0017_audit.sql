-- The audit log (store.AuditLog): one row per security event, never
-- changed, removed only by age. Pages are read newest first by id, for a
-- user or by an actor, each a range scan of its index; the time's index
-- serves the pruning.
CREATE TABLE auth_audit (
    id             BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at             BIGINT NOT NULL,
    kind           VARBINARY(64) NOT NULL,
    user_id        VARBINARY(255) NOT NULL DEFAULT '',
    actor          VARBINARY(255) NOT NULL DEFAULT '',
    session_handle VARBINARY(255) NOT NULL DEFAULT '',
    method         VARBINARY(64) NOT NULL DEFAULT '',
    third_party    VARBINARY(255) NOT NULL DEFAULT '',
    reason         VARBINARY(64) NOT NULL DEFAULT '',
    role           VARBINARY(255) NOT NULL DEFAULT '',
    remote_addr    VARBINARY(255) NOT NULL DEFAULT '',
    user_agent     VARCHAR(512) NOT NULL DEFAULT '',
    KEY auth_audit_user (user_id, id),
    KEY auth_audit_actor (actor, id),
    KEY auth_audit_at (at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
