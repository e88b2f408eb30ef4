package wire

import (
	"slices"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/store"
)

// User is the user object of FDI 1.18 and 3.x and later, as the SDKs'
// User.toJson writes it: the sign-in answers' and the dashboard's.
type User struct {
	ID            string        `json:"id"`
	IsPrimaryUser bool          `json:"isPrimaryUser"`
	TenantIDs     []string      `json:"tenantIds"`
	Emails        []string      `json:"emails"`
	PhoneNumbers  []string      `json:"phoneNumbers"`
	ThirdParty    []ThirdParty  `json:"thirdParty"`
	WebAuthn      WebAuthn      `json:"webauthn"`
	LoginMethods  []LoginMethod `json:"loginMethods"`
	TimeJoined    int64         `json:"timeJoined"`
	// The names the dashboard's user page shows, from user metadata in
	// the SDKs: absent from the sign-in answers.
	FirstName *string `json:"firstName,omitempty"`
	LastName  *string `json:"lastName,omitempty"`
}

// LoginMethod is one of a User's loginMethods.
type LoginMethod struct {
	RecipeID     string      `json:"recipeId"`
	RecipeUserID string      `json:"recipeUserId"`
	TenantIDs    []string    `json:"tenantIds"`
	Email        string      `json:"email,omitempty"`
	PhoneNumber  string      `json:"phoneNumber,omitempty"`
	ThirdParty   *ThirdParty `json:"thirdParty,omitempty"`
	WebAuthn     *WebAuthn   `json:"webauthn,omitempty"`
	TimeJoined   int64       `json:"timeJoined"`
	Verified     bool        `json:"verified"`
}

// ThirdParty names a third-party identity: the provider and its id for
// the user.
type ThirdParty struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
}

// WebAuthn lists passkeys' credential ids; FDI 4.2 requires the member
// even when it is empty.
type WebAuthn struct {
	CredentialIDs []string `json:"credentialIds"`
}

// PublicTenant is the tenantIds of a user or login of the public tenant
// alone.
var PublicTenant = []string{store.PublicTenant}

// TenantsOf is the tenantIds of a login of tenant (as the store keeps it).
func TenantsOf(tenant string) []string {
	if tenant == "" {
		return PublicTenant
	}
	return []string{tenant}
}

// UserOf is the user object of u with its logins; isPrimary is its
// isPrimaryUser.
func UserOf(u store.User, logins []store.Login, isPrimary bool) User {
	out := User{ID: u.ID, IsPrimaryUser: isPrimary, TenantIDs: []string{}, Emails: []string{}, PhoneNumbers: []string{},
		ThirdParty: []ThirdParty{}, WebAuthn: WebAuthn{CredentialIDs: []string{}}, LoginMethods: []LoginMethod{},
		TimeJoined: u.TimeJoined.UnixMilli()}
	for _, l := range logins {
		if l.Email != "" && !slices.Contains(out.Emails, l.Email) {
			out.Emails = append(out.Emails, l.Email)
		}
		if id := store.TenantID(l.Tenant); !slices.Contains(out.TenantIDs, id) {
			out.TenantIDs = append(out.TenantIDs, id)
		}
		m := LoginMethod{RecipeID: l.Method, RecipeUserID: l.ID, TenantIDs: TenantsOf(l.Tenant), Email: l.Email,
			TimeJoined: l.CreatedAt.UnixMilli(), Verified: l.EmailVerified}
		if m.RecipeUserID == "" {
			m.RecipeUserID = u.ID
		}
		switch {
		case l.Method == store.MethodThirdParty:
			m.ThirdParty = &ThirdParty{l.ThirdParty, l.Subject}
			out.ThirdParty = append(out.ThirdParty, *m.ThirdParty)
		case l.Method == store.MethodWebAuthn:
			m.WebAuthn = &WebAuthn{CredentialIDs: []string{l.Subject}}
			out.WebAuthn.CredentialIDs = append(out.WebAuthn.CredentialIDs, l.Subject)
		case l.Method == store.MethodPasswordless && address.IsPhone(l.Subject):
			m.PhoneNumber = l.Subject
			out.PhoneNumbers = append(out.PhoneNumbers, l.Subject)
		}
		out.LoginMethods = append(out.LoginMethods, m)
	}
	return out
}

// Primary reports whether a user with these logins is a primary user in
// the SDKs' sense: one that later login methods may join, because it
// owns a verified email, or that several have joined.
func Primary(logins []store.Login) bool {
	for _, l := range logins {
		if l.OwnsEmail && l.EmailVerified {
			return true
		}
	}
	return len(logins) > 1
}
