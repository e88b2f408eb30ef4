-- A login's email is proven when whoever holds the login has shown they
-- read it: a provider vouched for it, a reset link set the password, or a
-- verification link was opened in a session of the login. Only a proven
-- login owns its email for account linking. Rows from before this step
-- take their verification as proof, as the release that wrote them did;
-- a login that owned an address it never verified owns it no more, so
-- that the address's owner can claim it.
ALTER TABLE auth_logins ADD COLUMN email_proven BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE auth_logins SET email_proven = email_verified;
UPDATE auth_logins SET owned_email = NULL WHERE email_verified = FALSE;
