-- Passkeys: a passkey is a login (method 'webauthn', keyed by the relying
-- party and the credential id) whose public key, sign counter and flags
-- are its material, which the library encodes; NULL for the methods that
-- keep none. WebAuthn ceremonies and passkey recovery links are rows of
-- auth_codes, with a ceremony's state in data; NULL for the kinds that keep
-- none. Existing rows keep neither.
ALTER TABLE auth_logins ADD COLUMN material BLOB;
ALTER TABLE auth_codes ADD COLUMN data BLOB;
