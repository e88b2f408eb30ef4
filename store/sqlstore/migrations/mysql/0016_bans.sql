-- An operator's ban of a user (store.Banner): when it began, when it ends
-- by itself (NULL: when it is lifted), the operator's note and who made
-- it. banned_at is NULL for a user who is not banned. A session insert
-- reads them with the epoch, on the row it already locks.
ALTER TABLE auth_users
    ADD COLUMN banned_at BIGINT NULL,
    ADD COLUMN banned_until BIGINT NULL,
    ADD COLUMN ban_reason TEXT NULL,
    ADD COLUMN banned_by VARBINARY(64) NULL;
