package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// maxClaims is how many claims the kernel and the recipes may register.
// A token's claim values live in a fixed array, so that making a token
// allocates nothing for them.
const maxClaims = 12

// A tokenClaim is a value a feature keeps in every access token of a
// session, under its own name in the token's payload: email
// verification's st-ev and MFA's st-mfa. The kernel asks for the value at
// sign-in and at each refresh, carries it into every token it rewrites,
// reads it once when it verifies a token, and runs the feature's check,
// with the route's rules, in RequireSession. A feature never writes a
// token itself, so a claim added later cannot be left out of one of them.
type tokenClaim interface {
	// name is the claim's key in the payload: plain ASCII, unlike any
	// other key of the token.
	name() string
	// inTokens reports whether the feature is on, so that its value goes
	// into tokens; its check runs either way.
	inTokens() bool
	// atSignIn is the claim's JSON value for the new session s, started
	// with the login by; nil leaves it out. r is the token's reading.
	atSignIn(ctx context.Context, s store.Session, by store.Login, now time.Time, r *kit.Reading) []byte
	// atRefresh is the value for s at a refresh that has committed, so
	// it cannot fail: nil leaves the claim out, and the check that needs
	// it reads the store.
	atRefresh(ctx context.Context, s store.Session, now time.Time, r *kit.Reading) []byte
	// parse reads a value that a verified token carries; the check gets
	// it from verifiedToken.parsed. It runs once per token, as the token
	// cache keeps the result.
	parse(raw json.RawMessage) (any, error)
	// checker is what a route's rules ask of the claim, or nil for
	// nothing.
	checker(rules []Rule) claimCheck
}

// A claimCheck passes the session of a verified token, or says why not:
// a *ClaimError, or the store's error, or errRevoked for a session
// whose user or login is gone. fresh is the claim's value as read while
// checking, for a new access token, or nil. A check answers nothing
// itself: RequireSession answers for every claim alike.
type claimCheck func(ctx context.Context, vt *verifiedToken) (fresh []byte, err error)

// A routeCheck is a claimCheck that a route's rules asked for, with the
// index of its claim.
type routeCheck struct {
	claim int
	check claimCheck
}

// A ClaimError is a session that one of its claims refuses: its email is
// not verified (st-ev), it has not met its MFA requirement or a
// FactorWithin rule (st-mfa), or it lacks a role or permission a rule of
// package roles asks for (st-role, st-perm). RequireSession answers it
// 403 with the SDKs' "invalid claim" body, whose entry for the claim has
// Reason as its reason, one entry for each rule that refuses;
// VerifyToken returns the first.
type ClaimError = kit.ClaimError

func newClaimError(claim string, reason wire.ClaimReason) *ClaimError {
	return &ClaimError{Claim: claim, Message: reason.Message, FactorID: reason.FactorID, Reason: reason}
}

// The kernel's claims, registered by New in this order, which is the
// order of their checks.
const (
	claimEV  = iota // st-ev, email verification's
	claimMFA        // st-mfa, MFA's
	_               // st-fresh, the fresh sign-in's
	claimImp        // st-imp, impersonation's
)

// claimValues are the JSON values of a token's claims, at their claims'
// indexes in Auth.claims; nil where the token has none.
type claimValues [maxClaims][]byte

// A Rule changes what a route asks of a session, given to RequireSession
// or OptionalSession: this package's VerifiedEmail, AllowUnverifiedEmail,
// FactorWithin and AllowPendingMFA, and package roles' rules. Rules
// compose: each concerns one thing, and of two rules about the same
// thing the stricter holds; FactorWithin rules all hold, and so do the
// rules of package roles.
type Rule = kit.Rule

// registerClaim adds c to the claims of every token and every check of
// RequireSession, which runs the checks in the order of registration, at
// the next index of claimValues.
func (a *Auth) registerClaim(c tokenClaim) error {
	name := c.name()
	switch {
	case len(a.claims) == maxClaims:
		return fmt.Errorf("auth: claim %q: at most %d claims", name, maxClaims)
	// encoding/json matches a payload's keys whatever their case, so a
	// name that differs from another only in case would stand for it.
	case !plainName(name) || name == "-" || isStandardClaim(strings.ToLower(name)) ||
		slices.ContainsFunc(a.claimNames, func(n string) bool { return strings.EqualFold(n, name) }):
		return fmt.Errorf("auth: claim %q: the name is taken, or not a plain ASCII word", name)
	}
	a.claims = append(a.claims, c)
	a.claimNames = append(a.claimNames, name)
	switch c.(type) {
	case recipeClaim, appClaim:
		a.readings = true
	}
	a.claimsInTokens = a.claimsInTokens || c.inTokens()
	a.claimFields = claimFieldsOf(a.claimNames)
	return nil
}

// plainName reports whether name is 1 to 64 bytes of ASCII letters,
// digits, '-', '_' and '.': a payload key the token's encoder writes as
// it is.
func plainName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// recipeClaim is a claim a recipe registered through the seam, as the
// kernel keeps its own.
type recipeClaim struct {
	c     kit.Claim
	index int // in claimValues
}

func (rc recipeClaim) name() string   { return rc.c.Name() }
func (rc recipeClaim) inTokens() bool { return true }

func (rc recipeClaim) atSignIn(ctx context.Context, s store.Session, by store.Login, now time.Time, r *kit.Reading) []byte {
	return rc.c.AtSignIn(ctx, s, by, now, r)
}

func (rc recipeClaim) atRefresh(ctx context.Context, s store.Session, now time.Time, r *kit.Reading) []byte {
	return rc.c.AtRefresh(ctx, s, now, r)
}

func (rc recipeClaim) parse(raw json.RawMessage) (any, error) { return rc.c.Parse(raw) }

func (rc recipeClaim) checker(rules []Rule) claimCheck {
	var args []any
	for _, r := range rules {
		if r.Claim() == rc.c.Name() {
			args = append(args, r.Arg())
		}
	}
	check := rc.c.Check(args)
	if check == nil {
		return nil
	}
	return func(ctx context.Context, vt *verifiedToken) ([]byte, error) {
		if t := vt.session.TenantID; t != PublicTenant {
			ctx = kit.WithTenantID(ctx, t)
		}
		return check(ctx, vt.session.UserID, vt.parsed[rc.index])
	}
}

// isStandardClaim reports whether name is a key of accessClaims.
func isStandardClaim(name string) bool {
	switch name {
	case "sub", "rsub", "sessionhandle", "tid", "tokentype", "iss", "iat", "exp", "nbf", "jti":
		return true
	}
	return false
}

// claimsAtSignIn are the claims of a session's first access token.
func (a *Auth) claimsAtSignIn(ctx context.Context, s store.Session, by store.Login, now time.Time) (v claimValues) {
	r := a.newReading()
	for i, c := range a.claims {
		if c.inTokens() {
			v[i] = c.atSignIn(ctx, s, by, now, r)
		}
	}
	return v
}

// newReading is the kit.Reading of one token's claims, or nil where only
// the kernel's claims are registered, which read nothing for another: a
// token then allocates nothing for it.
func (a *Auth) newReading() *kit.Reading {
	if !a.readings {
		return nil
	}
	return new(kit.Reading)
}

// claimsAtRefresh are the claims of the access token a refresh issues,
// for the rotation res.
func (a *Auth) claimsAtRefresh(ctx context.Context, res store.Rotated, now time.Time) (v claimValues) {
	s := res.Session
	r := a.newReading()
	if res.RolesRead && r != nil && res.Session.Tenant == "" {
		r.Keep(kit.RotationRoles{}, kit.Roles{Roles: res.Roles, Permissions: res.Permissions})
	}
	for i, c := range a.claims {
		if c.inTokens() {
			v[i] = c.atRefresh(ctx, s, now, r)
		}
	}
	return v
}

// checksOf are the checks that a route's rules ask for, in the order
// the claims were registered.
func (a *Auth) checksOf(rules []Rule) []routeCheck {
	var checks []routeCheck
	for i, c := range a.claims {
		if check := c.checker(rules); check != nil {
			checks = append(checks, routeCheck{i, check})
		}
	}
	return checks
}

// runCheck runs a route's check on the session of vt, and writes the
// claim's fresh value, if the check read one, into a new access token.
func (a *Auth) runCheck(ctx context.Context, w http.ResponseWriter, vt *verifiedToken, m mode, c routeCheck) error {
	fresh, err := c.check(ctx, vt)
	if fresh != nil {
		if err := a.rewriteAccess(ctx, w, vt, m, c.claim, fresh); err != nil {
			return err
		}
	}
	return err
}

// namedClaims are the claims of one token with their names, as the
// token's encoder reads them.
type namedClaims struct {
	names  []string // Auth.claimNames
	values claimValues
}

// appendJSON appends the claims that have values as ,"name":value pairs.
func (nc *namedClaims) appendJSON(b []byte) []byte {
	for i, name := range nc.names {
		if v := nc.values[i]; v != nil {
			b = append(b, `,"`...)
			b = append(b, name...)
			b = append(b, `":`...)
			b = append(b, v...)
		}
	}
	return b
}

// readClaims fills in the claims of a verified token from its payload.
// Only a token of a configuration with claims pays for the second
// decoding of its payload, into a struct with a field for each claim
// (claimFields), so that encoding/json skips the token's other keys
// without a copy.
func (a *Auth) readClaims(vt *verifiedToken, tok string) error {
	if !a.claimsInTokens {
		return nil
	}
	dot := strings.IndexByte(tok, '.')
	end := strings.LastIndexByte(tok, '.')
	payload, err := base64.RawURLEncoding.DecodeString(tok[dot+1 : end])
	if err != nil {
		return err
	}
	fields := reflect.New(a.claimFields)
	if err := json.Unmarshal(payload, fields.Interface()); err != nil {
		return err
	}
	for i, c := range a.claims {
		raw := json.RawMessage(fields.Elem().Field(i).Bytes())
		if raw == nil || !c.inTokens() || string(raw) == "null" {
			continue
		}
		if vt.parsed[i], err = c.parse(raw); err != nil {
			return fmt.Errorf("claim %s: %w", c.name(), err)
		}
		vt.claims[i] = raw
	}
	return nil
}

// claimFieldsOf is a struct type with a json.RawMessage field for each of
// the names, as readClaims decodes a payload into.
func claimFieldsOf(names []string) reflect.Type {
	fields := make([]reflect.StructField, len(names))
	for i, name := range names {
		fields[i] = reflect.StructField{
			Name: "Claim" + strconv.Itoa(i),
			Type: reflect.TypeFor[json.RawMessage](),
			Tag:  reflect.StructTag(`json:"` + name + `"`),
		}
	}
	return reflect.StructOf(fields)
}
