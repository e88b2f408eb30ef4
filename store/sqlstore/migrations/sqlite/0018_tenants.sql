-- Tenants. A login, a code and a session belong to a tenant, '' for the
-- public one, which every row from before this step belongs to. A login's
-- key is unique per tenant, and so is the ownership of an email: the same
-- address in two tenants is two logins, each of which may own it. A
-- tenant's sessions are found by tenant to end them with it; the index
-- leaves out the public tenant's, which nothing looks for by tenant.
--
-- SQLite cannot change a primary key, so auth_logins is rebuilt, as
-- SQLite's procedure for changing a table asks (Migrate runs the step with
-- foreign key enforcement off and checks the keys before it commits),
-- keeping every row and index; no table refers to it.
CREATE TABLE auth_logins_new (
    tenant         TEXT NOT NULL DEFAULT '',
    method         TEXT NOT NULL,
    third_party    TEXT NOT NULL DEFAULT '',
    subject        TEXT NOT NULL,
    user_id        TEXT NOT NULL REFERENCES auth_users (id),
    email          TEXT NOT NULL,
    email_verified INTEGER NOT NULL DEFAULT 0,
    password_hash  TEXT NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    id             TEXT NOT NULL DEFAULT '',
    owned_email    TEXT,
    email_proven   INTEGER NOT NULL DEFAULT 0,
    material       BLOB,
    PRIMARY KEY (tenant, method, third_party, subject)
);
INSERT INTO auth_logins_new (method, third_party, subject, user_id, email, email_verified, password_hash, created_at,
        id, owned_email, email_proven, material)
    SELECT method, third_party, subject, user_id, email, email_verified, password_hash, created_at,
        id, owned_email, email_proven, material FROM auth_logins;
DROP TABLE auth_logins;
ALTER TABLE auth_logins_new RENAME TO auth_logins;
CREATE INDEX auth_logins_user ON auth_logins (user_id, created_at);
CREATE INDEX auth_logins_email ON auth_logins (email);
CREATE UNIQUE INDEX auth_logins_id ON auth_logins (id);
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
    config     BLOB,
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
    hash       BLOB PRIMARY KEY,
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
