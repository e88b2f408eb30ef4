package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/store"
)

// TokenClaims adds claims of the application's own to every access
// token, as SuperTokens' access-token payload does: the SDKs'
// getAccessTokenPayloadSecurely shows them, and so does every token's
// payload. The zero value adds none.
type TokenClaims struct {
	// Names are the claims Values may set, each a plain ASCII word
	// (letters, digits, '-', '_', '.') of at most 64 bytes; at most
	// MaxTokenClaims. New refuses a name the library, the SDKs or another
	// claim use: sub, iat, exp, iss, nbf, jti, rsub, sessionHandle, tId,
	// tokenType, stt, antiCsrfToken, parentRefreshTokenHash1,
	// refreshTokenHash1, and any name starting with "st-".
	Names []string

	// Values returns the claims of a session of the user userID, by
	// name, each encoded with encoding/json. New calls it at sign-in and
	// at every refresh, so a change reaches a session at its next
	// refresh. A name it leaves out, or that is not in Names, is left out
	// of the token. Should it fail, or its claims take more than
	// MaxTokenClaimBytes encoded, the token carries none of them, and the
	// Logger says why.
	Values func(ctx context.Context, userID, sessionHandle string) (map[string]any, error)
}

// The bounds of TokenClaims: access tokens travel in headers and
// cookies, where a few kilobytes is all there is.
const (
	MaxTokenClaims     = 6
	MaxTokenClaimBytes = 1024
)

// reservedClaims are the names that TokenClaims may not use, beside
// those of accessClaims and every st- name: the SuperTokens backends'
// protected names.
var reservedClaims = []string{"stt", "antiCsrfToken", "parentRefreshTokenHash1", "refreshTokenHash1"}

func (c *TokenClaims) check() error {
	if len(c.Names) == 0 {
		return nil
	}
	if c.Values == nil {
		return fmt.Errorf("auth: Config.TokenClaims names %q but has no Values", c.Names)
	}
	if len(c.Names) > MaxTokenClaims {
		return fmt.Errorf("auth: Config.TokenClaims names %d claims; at most %d", len(c.Names), MaxTokenClaims)
	}
	for _, name := range c.Names {
		// encoding/json reads keys whatever their case.
		if strings.HasPrefix(strings.ToLower(name), "st-") ||
			slices.ContainsFunc(reservedClaims, func(r string) bool { return strings.EqualFold(r, name) }) {
			return fmt.Errorf("auth: Config.TokenClaims: %q is a name the library or the SDKs use", name)
		}
	}
	c.Names = slices.Clone(c.Names)
	return nil
}

// registerTokenClaims registers a claim for each of Config.TokenClaims'
// names; registerClaim refuses the names taken.
func (a *Auth) registerTokenClaims() error {
	for i, name := range a.cfg.TokenClaims.Names {
		if err := a.registerClaim(appClaim{a, name, i == 0}); err != nil {
			return err
		}
	}
	return nil
}

// appValues is the key of the application's claims, encoded, in a token's
// kit.Reading: the first of the claims asks TokenClaims.Values for them
// all, so that a token calls it once.
type appValues struct{}

// appClaim is one of the application's claims.
type appClaim struct {
	a     *Auth
	claim string
	first bool // asks TokenClaims.Values for every name
}

func (c appClaim) name() string                           { return c.claim }
func (c appClaim) inTokens() bool                         { return true }
func (c appClaim) parse(raw json.RawMessage) (any, error) { return raw, nil }
func (c appClaim) checker([]Rule) claimCheck              { return nil }

func (c appClaim) atSignIn(ctx context.Context, s store.Session, _ store.Login, now time.Time, r *kit.Reading) []byte {
	return c.atRefresh(ctx, s, now, r)
}

func (c appClaim) atRefresh(ctx context.Context, s store.Session, _ time.Time, r *kit.Reading) []byte {
	if c.first {
		r.Keep(appValues{}, c.a.appClaimValues(ctx, s))
	}
	values, _ := r.Kept(appValues{})
	encoded, _ := values.(map[string][]byte)
	return encoded[c.claim]
}

// appClaimValues asks TokenClaims.Values for the claims of s, encoded,
// or nil when it fails or they take too much room.
func (a *Auth) appClaimValues(ctx context.Context, s store.Session) map[string][]byte {
	tc := a.cfg.TokenClaims
	values, err := tc.Values(ctx, s.UserID, s.Handle)
	size := 0
	encoded := map[string][]byte{}
	for _, name := range tc.Names {
		v, ok := values[name]
		if !ok || err != nil {
			continue
		}
		b, merr := json.Marshal(v)
		if merr != nil {
			err = fmt.Errorf("claim %q: %w", name, merr)
			break
		}
		encoded[name], size = b, size+len(name)+len(b)
	}
	if err == nil && size > MaxTokenClaimBytes {
		err = fmt.Errorf("the claims take %d bytes, over MaxTokenClaimBytes (%d)", size, MaxTokenClaimBytes)
	}
	if err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: the application's token claims left out",
			slog.String("user_id", s.UserID), slog.String("error", err.Error()))
		return nil
	}
	return encoded
}
