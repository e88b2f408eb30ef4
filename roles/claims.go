package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/store"
)

// The claims' names, as the SDKs' UserRoleClaim and PermissionClaim read
// them.
const (
	roleClaimName       = "st-role"
	permissionClaimName = "st-perm"
)

// value is the value of either claim: {"v": [...], "t": <ms>}.
type value struct {
	V []string `json:"v"`
	T int64    `json:"t"`
}

func encode(list []string, now time.Time) []byte {
	if list == nil {
		list = []string{}
	}
	b, _ := json.Marshal(value{list, now.UnixMilli()})
	return b
}

// parse reads a claim as the library writes it: anything else, a null in
// the list included (which encoding/json would read as ""), is not the
// claim, and the checks read the store.
func parse(raw json.RawMessage) (any, error) {
	var read struct {
		V []*string `json:"v"`
		T int64     `json:"t"`
	}
	if err := json.Unmarshal(raw, &read); err != nil {
		return nil, err
	}
	if read.V == nil {
		return nil, errors.New("no list")
	}
	v := &value{V: make([]string, len(read.V)), T: read.T}
	for i, s := range read.V {
		if s == nil {
			return nil, errors.New("a null in the list")
		}
		v.V[i] = *s
	}
	return v, nil
}

// permissionsRead is the key, in a token's kit.Reading, of the
// permissions that the role claim read with the roles (nil when it could
// not read): the permission claim, which the kernel asks next for the
// same token, takes them, so that a sign-in or a refresh reads the store
// once.
type permissionsRead struct{}

// roleClaim is st-role.
type roleClaim struct{ p *Recipe }

func (roleClaim) Name() string                           { return roleClaimName }
func (roleClaim) Parse(raw json.RawMessage) (any, error) { return parse(raw) }

func (c roleClaim) AtSignIn(ctx context.Context, s store.Session, _ store.Login, now time.Time, r *kit.Reading) []byte {
	return c.AtRefresh(ctx, s, now, r)
}

// AtRefresh takes the roles the rotation read in its step, if it could,
// and reads them otherwise.
func (c roleClaim) AtRefresh(ctx context.Context, s store.Session, now time.Time, r *kit.Reading) []byte {
	var roles, perms []string
	if read, ok := r.Kept(kit.RotationRoles{}); ok {
		rr := read.(kit.Roles)
		roles, perms = rr.Roles, rr.Permissions
	} else {
		var err error
		if roles, perms, err = c.p.st.UserRoles(ctx, store.TenantID(s.Tenant), s.UserID); err != nil {
			return nil // the checks read the store
		}
	}
	if perms == nil {
		perms = []string{}
	}
	r.Keep(permissionsRead{}, perms)
	return encode(roles, now)
}

func (c roleClaim) Check(args []any) kit.ClaimCheck {
	return c.p.checkOf(args, func(ctx context.Context, userID string) ([]string, error) {
		roles, _, err := c.p.st.UserRoles(ctx, kit.TenantIDOf(ctx), userID)
		return roles, err
	})
}

// permissionClaim is st-perm.
type permissionClaim struct{ p *Recipe }

func (permissionClaim) Name() string                           { return permissionClaimName }
func (permissionClaim) Parse(raw json.RawMessage) (any, error) { return parse(raw) }

func (c permissionClaim) AtSignIn(ctx context.Context, s store.Session, _ store.Login, now time.Time, r *kit.Reading) []byte {
	return c.AtRefresh(ctx, s, now, r)
}

// AtRefresh leaves the claim out when the role claim could not read: the
// two claims come from one reading or not at all.
func (c permissionClaim) AtRefresh(ctx context.Context, s store.Session, now time.Time, r *kit.Reading) []byte {
	read, _ := r.Kept(permissionsRead{})
	if perms, _ := read.([]string); perms != nil {
		return encode(perms, now)
	}
	return nil
}

func (c permissionClaim) Check(args []any) kit.ClaimCheck {
	return c.p.checkOf(args, func(ctx context.Context, userID string) ([]string, error) {
		_, perms, err := c.p.st.UserRoles(ctx, kit.TenantIDOf(ctx), userID)
		return perms, err
	})
}

// A rule is what one of the package's rules asks of a claim's list.
type rule struct {
	claim string
	want  []string
	all   bool // every one of want, else at least one; one wanted is either
}

// Require asks a route's session for the role role.
func Require(role string) kit.Rule { return ruleOf(roleClaimName, true, role) }

// RequireAll asks a route's session for every one of roles.
func RequireAll(roles ...string) kit.Rule { return ruleOf(roleClaimName, true, roles...) }

// RequireAny asks a route's session for at least one of roles.
func RequireAny(roles ...string) kit.Rule { return ruleOf(roleClaimName, false, roles...) }

// RequirePermission asks a route's session for the permission
// permission, held through any of its roles.
func RequirePermission(permission string) kit.Rule {
	return ruleOf(permissionClaimName, true, permission)
}

// RequireAllPermissions asks a route's session for every one of
// permissions.
func RequireAllPermissions(permissions ...string) kit.Rule {
	return ruleOf(permissionClaimName, true, permissions...)
}

// RequireAnyPermission asks a route's session for at least one of
// permissions.
func RequireAnyPermission(permissions ...string) kit.Rule {
	return ruleOf(permissionClaimName, false, permissions...)
}

// ruleOf is a rule that wants want of claim's list, trimmed as the Go
// API trims names. A rule that wants nothing, or a name the Go API would
// refuse, is a mistake in the application's routes, which it sees when
// it builds them: ruleOf panics, as net/http does for a bad pattern,
// rather than make a rule that passes every session.
func ruleOf(claim string, all bool, want ...string) kit.Rule {
	kind := "role"
	if claim == permissionClaimName {
		kind = "permission"
	}
	wanted, err := names(kind, want)
	if err == nil && len(wanted) == 0 {
		err = fmt.Errorf("roles: a rule that asks for no %s", kind)
	}
	if err != nil {
		panic(err)
	}
	return kit.NewRule(claim, rule{claim, wanted, all})
}

// checkOf is the check of a claim's rules: nil when there are none. A
// token without the claim, or any token where the store is the judge
// (p.fresh), has it read from the store, and a value read that is not
// the token's goes into a new access token.
func (p *Recipe) checkOf(args []any, read func(context.Context, string) ([]string, error)) kit.ClaimCheck {
	var rules []rule
	for _, a := range args {
		if r, ok := a.(rule); ok {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return func(ctx context.Context, userID string, claim any) ([]byte, error) {
		var have []string
		var fresh []byte
		v, ok := claim.(*value)
		if ok {
			have = v.V
		}
		if !ok || p.fresh {
			list, err := read(ctx, userID)
			if err != nil {
				return nil, err
			}
			if !ok || !slices.Equal(list, v.V) {
				have, fresh = list, encode(list, p.k.Now())
			}
		}
		var refused []error
		for _, r := range rules {
			if err := r.check(have); err != nil {
				refused = append(refused, err)
			}
		}
		return fresh, errors.Join(refused...)
	}
}

// check passes a list that holds what r wants, or says why not in the
// SDKs' words.
func (r rule) check(have []string) error {
	held := 0
	for _, w := range r.want {
		if slices.Contains(have, w) {
			held++
		}
	}
	if r.all && held == len(r.want) || !r.all && held > 0 {
		return nil
	}
	why := reason{Message: "wrong value", ActualValue: have}
	if why.ActualValue == nil {
		why.ActualValue = []string{}
	}
	switch {
	case len(r.want) == 1:
		why.ExpectedToInclude = r.want[0]
	case r.all:
		why.ExpectedToInclude = r.want
	default:
		why.ExpectedToIncludeAtLeastOneOf = r.want
	}
	return &kit.ClaimError{Claim: r.claim, Message: why.Message, Reason: why}
}

// reason is the reason of a failed rule, as the SDKs' validators of a
// list claim give it.
type reason struct {
	Message                       string   `json:"message"`
	ExpectedToInclude             any      `json:"expectedToInclude,omitempty"`
	ExpectedToIncludeAtLeastOneOf []string `json:"expectedToIncludeAtLeastOneOf,omitempty"`
	ActualValue                   []string `json:"actualValue"`
}
