-- Passwordless sign-in: a flow and the codes sent for it are rows of
-- auth_codes. A flow belongs to no user, so user_id may be NULL; a code
-- names its flow by hash (flow), and a flow counts the wrong codes
-- submitted to it (attempts). Codes are found by their flow, and flows by
-- their address, which a code carries too. Existing rows are reset and
-- verification tokens, with no flow and no attempts. One statement, as
-- MySQL commits each schema change on its own.
ALTER TABLE auth_codes
    MODIFY user_id VARBINARY(64) NULL,
    ADD COLUMN flow BINARY(32) NULL,
    ADD COLUMN attempts INT NOT NULL DEFAULT 0,
    ADD KEY auth_codes_flow (flow),
    ADD KEY auth_codes_flows (kind, email);
