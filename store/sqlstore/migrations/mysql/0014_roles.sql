-- Roles (store.RoleStore): a role is known by its name and has plain
-- permissions; which user holds which role is recorded per tenant. Names,
-- permissions and tenants are at most 255 bytes. seq keeps each list in
-- the order its entries were added. A role's permissions and holdings go
-- with it (ON DELETE CASCADE); DeleteRole also deletes them itself, as
-- SQLite enforces foreign keys only when asked. A holding names no user
-- row: a role may be given before its user exists, and DeleteUser deletes
-- the user's holdings, in every tenant.
CREATE TABLE auth_roles (
    name VARBINARY(255) NOT NULL PRIMARY KEY,
    seq  BIGINT NOT NULL AUTO_INCREMENT,
    KEY auth_roles_seq (seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_role_permissions (
    role       VARBINARY(255) NOT NULL,
    permission VARBINARY(255) NOT NULL,
    seq        BIGINT NOT NULL AUTO_INCREMENT,
    PRIMARY KEY (role, permission),
    KEY auth_role_permissions_seq (seq),
    KEY auth_role_permissions_permission (permission),
    CONSTRAINT auth_role_permissions_role_fk FOREIGN KEY (role) REFERENCES auth_roles (name) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE auth_user_roles (
    tenant  VARBINARY(255) NOT NULL,
    user_id VARBINARY(64) NOT NULL,
    role    VARBINARY(255) NOT NULL,
    seq     BIGINT NOT NULL AUTO_INCREMENT,
    PRIMARY KEY (tenant, user_id, role),
    KEY auth_user_roles_seq (seq),
    KEY auth_user_roles_role (role, tenant),
    KEY auth_user_roles_user (user_id),
    CONSTRAINT auth_user_roles_role_fk FOREIGN KEY (role) REFERENCES auth_roles (name) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
