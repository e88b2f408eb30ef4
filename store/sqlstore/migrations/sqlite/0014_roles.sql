-- Roles (store.RoleStore): a role is known by its name and has plain
-- permissions; which user holds which role is recorded per tenant. seq,
-- the rowid, keeps each list in the order its entries were added: a new
-- row's is above every other's. A role's permissions and holdings go with
-- it where foreign keys are enforced (ON DELETE CASCADE); DeleteRole also
-- deletes them itself, as SQLite enforces them only when asked. A holding
-- names no user row: a role may be given before its user exists, and
-- DeleteUser deletes the user's holdings, in every tenant.
CREATE TABLE auth_roles (
    seq  INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE auth_role_permissions (
    seq        INTEGER PRIMARY KEY,
    role       TEXT NOT NULL REFERENCES auth_roles (name) ON DELETE CASCADE,
    permission TEXT NOT NULL,
    UNIQUE (role, permission)
);
CREATE INDEX auth_role_permissions_permission ON auth_role_permissions (permission);

CREATE TABLE auth_user_roles (
    seq     INTEGER PRIMARY KEY,
    tenant  TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role    TEXT NOT NULL REFERENCES auth_roles (name) ON DELETE CASCADE,
    UNIQUE (tenant, user_id, role)
);
CREATE INDEX auth_user_roles_role ON auth_user_roles (role, tenant);
CREATE INDEX auth_user_roles_user ON auth_user_roles (user_id);
