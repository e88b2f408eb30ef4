-- Roles (store.RoleStore): a role is known by its name and has plain
-- permissions; which user holds which role is recorded per tenant. seq
-- keeps each list in the order its entries were added. A role's
-- permissions and holdings go with it (ON DELETE CASCADE); DeleteRole also
-- deletes them itself, as SQLite enforces foreign keys only when asked. A
-- holding names no user row: a role may be given before its user exists,
-- and DeleteUser deletes the user's holdings, in every tenant.
CREATE TABLE auth_roles (
    name TEXT PRIMARY KEY,
    seq  BIGINT GENERATED ALWAYS AS IDENTITY
);

CREATE TABLE auth_role_permissions (
    role       TEXT NOT NULL REFERENCES auth_roles (name) ON DELETE CASCADE,
    permission TEXT NOT NULL,
    seq        BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (role, permission)
);
CREATE INDEX auth_role_permissions_permission ON auth_role_permissions (permission);

CREATE TABLE auth_user_roles (
    tenant  TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role    TEXT NOT NULL REFERENCES auth_roles (name) ON DELETE CASCADE,
    seq     BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (tenant, user_id, role)
);
CREATE INDEX auth_user_roles_role ON auth_user_roles (role, tenant);
CREATE INDEX auth_user_roles_user ON auth_user_roles (user_id);
