-- The audit log (store.AuditLog): one row per security event, never
-- changed, removed only by age. Pages are read newest first by id, for a
-- user or by an actor, each a range scan of its index; the time's index
-- serves the pruning. AUTOINCREMENT never gives an id twice, even after
-- the newest rows are pruned, so a cursor never points past a new entry.
CREATE TABLE auth_audit (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at             BIGINT NOT NULL,
    kind           TEXT NOT NULL,
    user_id        TEXT NOT NULL DEFAULT '',
    actor          TEXT NOT NULL DEFAULT '',
    session_handle TEXT NOT NULL DEFAULT '',
    method         TEXT NOT NULL DEFAULT '',
    third_party    TEXT NOT NULL DEFAULT '',
    reason         TEXT NOT NULL DEFAULT '',
    role           TEXT NOT NULL DEFAULT '',
    remote_addr    TEXT NOT NULL DEFAULT '',
    user_agent     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX auth_audit_user ON auth_audit (user_id, id);
CREATE INDEX auth_audit_actor ON auth_audit (actor, id);
CREATE INDEX auth_audit_at ON auth_audit (at);
