-- Tenants. A login, a code and a session belong to a tenant, '' for the
-- public one, which every row from before this step belongs to. A login's
-- key is unique per tenant, and so is the ownership of an email: the same
-- address in two tenants is two logins, each of which may own it. A
-- tenant's sessions are found by tenant to end them with it. Tenant ids
-- are at most 255 bytes, as roles' tenants are; the login key's 671 bytes
-- and the owned email's 575 are within InnoDB's 3072 a key.
ALTER TABLE auth_logins
    ADD COLUMN tenant VARBINARY(255) NOT NULL DEFAULT '',
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (tenant, method, third_party, subject),
    DROP INDEX auth_logins_owned_email,
    ADD UNIQUE KEY auth_logins_owned_email (tenant, owned_email);
ALTER TABLE auth_codes ADD COLUMN tenant VARBINARY(255) NOT NULL DEFAULT '';
ALTER TABLE auth_sessions
    ADD COLUMN tenant VARBINARY(255) NOT NULL DEFAULT '',
    ADD KEY auth_sessions_tenant (tenant);

-- The tenants (store.TenantStore), with their configuration as the
-- library encodes it; their members, listed in the order they joined; and
-- the invitations to join, known by the hash of their secret, listed
-- oldest first and voided by tenant and address. Neither names a user or
-- tenant row: DeleteUser and DeleteTenant delete them themselves.
CREATE TABLE auth_tenants (
    id         VARBINARY(255) NOT NULL PRIMARY KEY,
    config     MEDIUMBLOB NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_tenant_members (
    tenant    VARBINARY(255) NOT NULL,
    user_id   VARBINARY(64) NOT NULL,
    joined_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, user_id),
    KEY auth_tenant_members_joined (tenant, joined_at, user_id),
    KEY auth_tenant_members_user (user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_invitations (
    hash       BINARY(32) NOT NULL PRIMARY KEY,
    tenant     VARBINARY(255) NOT NULL,
    email      VARBINARY(320) NOT NULL,
    role       VARBINARY(255) NOT NULL DEFAULT '',
    invited_by VARBINARY(255) NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    KEY auth_invitations_tenant (tenant, created_at),
    KEY auth_invitations_email (tenant, email),
    KEY auth_invitations_expires (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
