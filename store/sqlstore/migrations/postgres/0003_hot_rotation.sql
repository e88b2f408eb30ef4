-- Every refresh rewrites its session row: the hashes, the times, the
-- expiry. When none of the changed columns is indexed, PostgreSQL can
-- update the row in place on its page (a heap-only tuple update) instead
-- of adding an entry to each of the table's indexes, and the dead row
-- versions are pruned without a vacuum. So the current hash is no longer
-- indexed here: rotation finds it through auth_refresh_tokens, whose
-- primary key already keeps every token hash unique. Expired sessions are
-- found by a scan, in DeleteExpired, which runs rarely. The free space
-- left on each page is where in-place updates land.
ALTER TABLE auth_sessions DROP CONSTRAINT auth_sessions_current_hash_key;
DROP INDEX auth_sessions_expires;
ALTER TABLE auth_sessions SET (fillfactor = 80);
