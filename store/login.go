package store

import "time"

// Login methods: the values of LoginKey.Method.
const (
	// MethodEmailPassword is an email and a password. Its Subject is the
	// normalised email.
	MethodEmailPassword = "emailpassword"
	// MethodThirdParty is an identity at a third-party provider. Its
	// ThirdParty is the provider's id, its Subject the provider's id for
	// the user.
	MethodThirdParty = "thirdparty"
	// MethodPasswordless is a one-time code or link sent to an email
	// address or a phone number. Its Subject is the normalised email, or
	// the phone number in E.164 form: "+" and digits, no "@".
	MethodPasswordless = "passwordless"
	// MethodWebAuthn is a passkey: a WebAuthn credential. Its ThirdParty
	// is the relying party's id, its Subject the credential id in
	// unpadded base64url, and its Material the credential's public key,
	// sign counter and flags, as the library encodes them.
	MethodWebAuthn = "webauthn"
	// MethodSecondFactors is not a way to sign in but the record of a
	// user's second factors: TOTP devices, recovery codes and the
	// factors the application requires of the user, all in its Material,
	// as the library encodes them (secrets sealed, codes hashed). A user
	// has at most one; its Subject is the user's id, and it has no email.
	// It is not among the user's Logins and never counts as a way to sign
	// in (see DeleteLogin): only Login finds it, by SecondFactorsKey.
	MethodSecondFactors = "mfa"
)

// A LoginKey names one way of signing in. It is unique across all users:
// one email and password login per email and tenant, one third-party
// login per tenant, provider and provider user id.
type LoginKey struct {
	// Tenant is the tenant the login belongs to, "" for the public tenant
	// (PublicTenant), which is every login's until an application has
	// tenants: the same email in two tenants is two logins, of two users
	// unless they are linked. In sets it.
	Tenant string
	// Method is MethodEmailPassword, MethodThirdParty, MethodPasswordless,
	// MethodWebAuthn or MethodSecondFactors.
	Method string
	// ThirdParty is the provider's id, such as "google", or for
	// MethodWebAuthn the relying party's id; "" for the other methods.
	ThirdParty string
	// Subject identifies the user within the method: the normalised email
	// for MethodEmailPassword, the provider's user id for MethodThirdParty,
	// the email or phone number for MethodPasswordless, the credential id
	// for MethodWebAuthn, the user's id for MethodSecondFactors.
	Subject string
}

// In is k in tenant: the public tenant, by either spelling, is "".
func (k LoginKey) In(tenant string) LoginKey {
	if tenant == PublicTenant {
		tenant = ""
	}
	k.Tenant = tenant
	return k
}

// TenantID is the id of a store tenant field: PublicTenant for "".
func TenantID(tenant string) string {
	if tenant == "" {
		return PublicTenant
	}
	return tenant
}

// EmailPasswordKey is the key of the email and password login of an email,
// which the library normalises (trimmed, lower-cased, Unicode NFC) before
// it reaches the store.
func EmailPasswordKey(email string) LoginKey {
	return LoginKey{Method: MethodEmailPassword, Subject: email}
}

// PasswordlessKey is the key of the passwordless login of an email
// (normalised as for EmailPasswordKey) or a phone number (E.164).
func PasswordlessKey(contact string) LoginKey {
	return LoginKey{Method: MethodPasswordless, Subject: contact}
}

// WebAuthnKey is the key of the passkey with the given relying party id
// and credential id (unpadded base64url).
func WebAuthnKey(relyingParty, credentialID string) LoginKey {
	return LoginKey{Method: MethodWebAuthn, ThirdParty: relyingParty, Subject: credentialID}
}

// SecondFactorsKey is the key of a user's record of second factors.
func SecondFactorsKey(userID string) LoginKey {
	return LoginKey{Method: MethodSecondFactors, Subject: userID}
}

// A Login is one login method of a user. A user has at least one, and at
// most one whose Method is MethodEmailPassword.
type Login struct {
	LoginKey
	// ID is the login's own id, unique across all logins and never
	// reused: the SDKs' recipeUserId, and the "rsub" of the sessions it
	// starts. A user's first login has the user's id (CreateUser and
	// SignInUp set it when it is empty); a login linked to an existing
	// user (LinkLogin) has one of its own.
	ID string
	// UserID is the user the login belongs to.
	UserID string
	// Email is the login's email, normalised. Logins of several users may
	// share it: an email and password user and a user who signed up with a
	// provider that reports the same address are two users.
	Email string
	// EmailVerified reports whether the email is known to belong to the
	// user.
	EmailVerified bool
	// EmailProven reports that whoever holds the login has shown they
	// read its email: a provider vouched for the address when they signed
	// in, they set the password from a reset link mailed to it, or the
	// application vouched for it (SetEmailVerified). A verification link
	// proves only that someone reads the inbox, not that they hold the
	// login, even when the browser that opens it carries the login's
	// session (a session can be planted in another's browser): it
	// verifies the email without proving it.
	// Only a proven login can own its email (OwnsEmail). A proven email
	// is verified; marking it unverified unproves it. Stores keep it as
	// written (CreateUser, SignInUp, LinkLogin) and change it only where
	// their methods say.
	EmailProven bool
	// Material is what the method keeps besides its key and email, in an
	// encoding of the library's: a passkey's public key, sign counter and
	// flags. Nothing secret: the library seals what would be. Stores keep
	// it as written (CreateUser, SignInUp, LinkLogin) and change it only
	// in UseCeremony and UpdateLoginMaterial. Nil for the methods that
	// keep none.
	Material []byte
	// PasswordHash is the password in PHC string format; only for
	// MethodEmailPassword.
	PasswordHash string
	// CreatedAt is when the login was added.
	CreatedAt time.Time
	// OwnsEmail reports that the login holds its email for its user in
	// account linking: a new login with this email, in the login's
	// tenant, may join only this login's user (LinkLogin). In each tenant
	// at most one login owns an email, and only
	// a login whose email is proven (EmailProven). A store sets it only
	// when asked (CreateUser, SignInUp, LinkLogin, ClaimEmail), ignores the
	// request for a login that is not proven, and clears it when the
	// login's email changes or stops being proven.
	OwnsEmail bool
	// SessionEpoch is the user's User.SessionEpoch, read in the same step
	// as the rest of the login (by Login, Logins and ResetPassword), so
	// that a session authorised by this login's credential can be created
	// under it. Stores ignore it on writes.
	SessionEpoch int64
}

// MovesWithEmail reports whether a login of method takes its user's new
// address when the user changes it (Store.ChangeEmail): email and
// password, passwordless and passkey logins do; a provider's login keeps
// the address the provider gives.
func MovesWithEmail(method string) bool {
	switch method {
	case MethodEmailPassword, MethodPasswordless, MethodWebAuthn:
		return true
	}
	return false
}

// KeyForEmail is the key k becomes when its login's address changes to
// email: the kinds keyed by address follow it, in the same tenant; a
// passkey keeps its credential's.
func KeyForEmail(k LoginKey, email string) LoginKey {
	switch k.Method {
	case MethodEmailPassword, MethodPasswordless:
		k.Subject = email
	}
	return k
}
