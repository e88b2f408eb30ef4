-- Passwordless sign-in: a flow and the codes sent for it are rows of
-- auth_codes. A flow belongs to no user, so user_id may be NULL; a code
-- names its flow by hash (flow), and a flow counts the wrong codes
-- submitted to it (attempts). Codes are found by their flow, and flows by
-- their address, which a code carries too. Existing rows are reset and
-- verification tokens, with no flow and no attempts.
ALTER TABLE auth_codes ALTER COLUMN user_id DROP NOT NULL;
ALTER TABLE auth_codes ADD COLUMN flow BYTEA;
ALTER TABLE auth_codes ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
CREATE INDEX auth_codes_flow ON auth_codes (flow);
CREATE INDEX auth_codes_flows ON auth_codes (kind, email);
