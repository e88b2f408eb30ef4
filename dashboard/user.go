package dashboard

import (
	"slices"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/store"
)

// The user object of the dashboard app, as the SDKs' User.toJson writes
// it: loginMethod is one of its loginMethods.
type loginMethod struct {
	RecipeID     string      `json:"recipeId"`
	RecipeUserID string      `json:"recipeUserId"`
	TenantIDs    []string    `json:"tenantIds"`
	Email        string      `json:"email,omitempty"`
	PhoneNumber  string      `json:"phoneNumber,omitempty"`
	ThirdParty   *thirdParty `json:"thirdParty,omitempty"`
	WebAuthn     *webAuthn   `json:"webauthn,omitempty"`
	TimeJoined   int64       `json:"timeJoined"`
	Verified     bool        `json:"verified"`
}

type thirdParty struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
}

type webAuthn struct {
	CredentialIDs []string `json:"credentialIds"`
}

type user struct {
	ID            string        `json:"id"`
	IsPrimaryUser bool          `json:"isPrimaryUser"`
	TenantIDs     []string      `json:"tenantIds"`
	Emails        []string      `json:"emails"`
	PhoneNumbers  []string      `json:"phoneNumbers"`
	ThirdParty    []thirdParty  `json:"thirdParty"`
	WebAuthn      webAuthn      `json:"webauthn"`
	TimeJoined    int64         `json:"timeJoined"`
	LoginMethods  []loginMethod `json:"loginMethods"`
	// The names the user page shows: from user metadata in the SDKs,
	// which this library does not keep (notEnabled), and absent from the
	// list of users.
	FirstName *string `json:"firstName,omitempty"`
	LastName  *string `json:"lastName,omitempty"`
}

// notEnabled is the name the SDKs give a user without the user metadata
// recipe.
var notEnabled = "FEATURE_NOT_ENABLED"

var publicTenant = []string{store.PublicTenant}

// userOf is the user object of u with its logins; linking is
// auth.Config's AccountLinking, without which no user is primary.
func userOf(u store.User, logins []store.Login, linking bool) user {
	out := user{ID: u.ID, TenantIDs: publicTenant, Emails: []string{}, PhoneNumbers: []string{},
		ThirdParty: []thirdParty{}, WebAuthn: webAuthn{CredentialIDs: []string{}}, LoginMethods: []loginMethod{},
		TimeJoined: u.TimeJoined.UnixMilli(), IsPrimaryUser: linking && primary(logins)}
	for _, l := range logins {
		if l.Email != "" && !slices.Contains(out.Emails, l.Email) {
			out.Emails = append(out.Emails, l.Email)
		}
		m := loginMethod{RecipeID: l.Method, RecipeUserID: l.ID, TenantIDs: publicTenant, Email: l.Email,
			TimeJoined: l.CreatedAt.UnixMilli(), Verified: l.EmailVerified}
		if m.RecipeUserID == "" {
			m.RecipeUserID = u.ID
		}
		switch {
		case l.Method == store.MethodThirdParty:
			m.ThirdParty = &thirdParty{l.ThirdParty, l.Subject}
			out.ThirdParty = append(out.ThirdParty, *m.ThirdParty)
		case l.Method == store.MethodWebAuthn:
			m.WebAuthn = &webAuthn{CredentialIDs: []string{l.Subject}}
			out.WebAuthn.CredentialIDs = append(out.WebAuthn.CredentialIDs, l.Subject)
		case l.Method == store.MethodPasswordless && address.IsPhone(l.Subject):
			m.PhoneNumber = l.Subject
			out.PhoneNumbers = append(out.PhoneNumbers, l.Subject)
		}
		out.LoginMethods = append(out.LoginMethods, m)
	}
	return out
}

// primary reports whether a user with these logins is a primary user in
// the SDKs' sense: one that owns a verified email, or that several
// logins have joined.
func primary(logins []store.Login) bool {
	for _, l := range logins {
		if l.OwnsEmail && l.EmailVerified {
			return true
		}
	}
	return len(logins) > 1
}
