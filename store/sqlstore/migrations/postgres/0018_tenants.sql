-- Tenants. A login, a code and a session belong to a tenant, '' for the
-- public one, which every row from before this step belongs to. A login's
-- key is unique per tenant, and so is the ownership of an email: the same
-- address in two tenants is two logins, each of which may own it. A
-- tenant's sessions are found by tenant to end them with it; the index
-- leaves out the public tenant's, which nothing looks for by tenant, and
-- the column never changes, so a refresh still updates its row in place.
ALTER TABLE auth_logins ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE auth_logins DROP CONSTRAINT auth_logins_pkey;
ALTER TABLE auth_logins ADD PRIMARY KEY (tenant, method, third_party, subject);
DROP INDEX auth_logins_owned_email;
CREATE UNIQUE INDEX auth_logins_owned_email ON auth_logins (tenant, owned_email);
ALTER TABLE auth_codes ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE auth_sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
CREATE INDEX auth_sessions_tenant ON auth_sessions (tenant) WHERE tenant <> '';

-- The tenants (store.TenantStore), with their configuration as the
-- library encodes it; their members, listed in the order they joined; and
-- the invitations to join, known by the hash of their secret, listed
-- oldest first and voided by tenant and address. Neither names a user or
-- tenant row: DeleteUser and DeleteTenant delete them themselves.
CREATE TABLE auth_tenants (
    id         TEXT PRIMARY KEY,
    config     BYTEA,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE auth_tenant_members (
    tenant    TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    joined_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, user_id)
);
CREATE INDEX auth_tenant_members_joined ON auth_tenant_members (tenant, joined_at, user_id);
CREATE INDEX auth_tenant_members_user ON auth_tenant_members (user_id);

CREATE TABLE auth_invitations (
    hash       BYTEA PRIMARY KEY,
    tenant     TEXT NOT NULL,
    email      TEXT NOT NULL,
    role       TEXT NOT NULL DEFAULT '',
    invited_by TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX auth_invitations_tenant ON auth_invitations (tenant, created_at);
CREATE INDEX auth_invitations_email ON auth_invitations (tenant, email);
CREATE INDEX auth_invitations_expires ON auth_invitations (expires_at);
