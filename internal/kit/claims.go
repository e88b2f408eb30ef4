package kit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/latchkit/auth/store"
)

// A Rule changes what a route asks of a session: auth.Rule. Each rule
// names the claim whose check reads it; only the package of that claim
// makes one, with NewRule.
type Rule struct {
	claim string
	arg   any
}

// NewRule is a rule for the claim named claim, with what its check makes
// of it.
func NewRule(claim string, arg any) Rule { return Rule{claim, arg} }

// Claim is the name of the claim whose check reads the rule.
func (r Rule) Claim() string { return r.claim }

// Arg is what the claim's check makes of the rule.
func (r Rule) Arg() any { return r.arg }

// A Claim is a value a recipe keeps in every access token of a session,
// under its own name in the token's payload (st-role). The kernel asks
// for the value at sign-in and at each refresh, carries it into every
// token it rewrites, reads it once when it verifies a token, and runs the
// claim's check, with a route's rules, in RequireSession and VerifyToken.
// A recipe registers it with Kernel.RegisterClaim while it is built.
type Claim interface {
	// Name is the claim's key in the payload: plain ASCII, unlike any
	// other key of the token.
	Name() string
	// AtSignIn is the claim's JSON value for the new session s, started
	// with the login by; nil leaves it out.
	AtSignIn(ctx context.Context, s store.Session, by store.Login, now time.Time, r *Reading) []byte
	// AtRefresh is the value for s at a refresh that has committed, so it
	// cannot fail: nil leaves the claim out, and a check that needs it
	// reads the store.
	AtRefresh(ctx context.Context, s store.Session, now time.Time, r *Reading) []byte
	// Parse reads a value that a verified token carries, once per token.
	Parse(raw json.RawMessage) (any, error)
	// Check is what the args of a route's rules that name the claim ask
	// of a session, or nil for nothing.
	Check(args []any) ClaimCheck
}

// A Reading is what the claims of one access token have read while the
// kernel asked for their values, so that claims a recipe registers
// together read the store once a token: roles reads a user's roles and
// their permissions in one call, for st-role and st-perm. The kernel
// makes one for each token it fills; no two tokens share one, however
// many fill at once for the same session.
type Reading struct {
	// A token's claims keep one or two values: inline, with a map only
	// past readingInline, so that filling a token allocates no map.
	keys, vals [readingInline]any
	n          int
	more       map[any]any
}

const readingInline = 4

// Keep keeps v under key, a value of a type of the recipe's own.
func (r *Reading) Keep(key, v any) {
	for i := range r.n {
		if r.keys[i] == key {
			r.vals[i] = v
			return
		}
	}
	if r.n < readingInline {
		r.keys[r.n], r.vals[r.n] = key, v
		r.n++
		return
	}
	if r.more == nil {
		r.more = map[any]any{}
	}
	r.more[key] = v
}

// Kept is what Keep kept under key.
func (r *Reading) Kept(key any) (v any, ok bool) {
	for i := range r.n {
		if r.keys[i] == key {
			return r.vals[i], true
		}
	}
	v, ok = r.more[key]
	return v, ok
}

// RotationRoles is the key under which a refresh's Reading holds the
// Roles that its rotation read (see Kernel.RolesWithRotation).
type RotationRoles struct{}

// Roles are a user's roles and their permissions, as
// store.RoleStore.UserRoles returns them.
type Roles struct{ Roles, Permissions []string }

// A ClaimCheck passes the session of the user userID whose token has the
// claim's value as Parse read it (nil where the token has none), or says
// why not: a *ClaimError (several joined with errors.Join where several
// rules refuse, each listed in the answer), or the store's error. fresh is the claim's
// value as read while checking, for a new access token, or nil. The
// session's tenant is TenantIDOf(ctx). A check
// answers nothing itself.
type ClaimCheck func(ctx context.Context, userID string, value any) (fresh []byte, err error)

// A ClaimError is a session that one of its claims refuses: package auth
// names it auth.ClaimError. The kernel answers it 403 with the SDKs'
// "invalid claim" body, whose entry for the claim has Reason as its
// reason.
type ClaimError struct {
	// Claim is the claim's name in the token: "st-ev", "st-role".
	Claim string
	// Message says why, as the SDKs' body does.
	Message string
	// FactorID is, for a FactorWithin rule, the factor to complete again.
	FactorID string
	// Reason is the SDKs' body's reason, encoded as it is.
	Reason any
}

func (e *ClaimError) Error() string { return "auth: claim " + e.Claim + " refused: " + e.Message }
