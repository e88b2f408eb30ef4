package auth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// The application's claims are in every access token, from one call of
// its function a token, and follow it at each refresh; a name it did not
// declare is left out.
func TestTokenClaims(t *testing.T) {
	for _, mode := range authtest.Modes {
		t.Run(mode.String(), func(t *testing.T) {
			var plan atomic.Value
			plan.Store("free")
			var calls atomic.Int32
			s := authtest.NewServer(t, auth.Config{TokenClaims: auth.TokenClaims{
				Names: []string{"plan", "org"},
				Values: func(_ context.Context, userID, handle string) (map[string]any, error) {
					calls.Add(1)
					if userID == "" || handle == "" {
						t.Errorf("Values(%q, %q)", userID, handle)
					}
					return map[string]any{"plan": plan.Load(), "org": map[string]int{"id": 7}, "undeclared": true}, nil
				},
			}})
			c := s.NewClient(mode)
			if res := c.SignUp("ada@example.com", "a good password 1"); res.Status != "OK" {
				t.Fatalf("sign-up: %s", res.Body)
			}
			up := decodeFrontToken(t, c.FrontToken).UP
			if up["plan"] != "free" || !reflect.DeepEqual(up["org"], map[string]any{"id": 7.0}) || up["undeclared"] != nil {
				t.Errorf("after sign-up: %v", up)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("Values called %d times for one token, want 1", n)
			}
			plan.Store("pro")
			c.Refresh()
			if up := decodeFrontToken(t, c.FrontToken).UP; up["plan"] != "pro" {
				t.Errorf("after a refresh: %v", up)
			}
		})
	}
}

// Values that fail, or take more room than a token has, leave every one
// of the application's claims out, and the log says why; the session
// works as ever.
func TestTokenClaimsLeftOut(t *testing.T) {
	for name, values := range map[string]func(context.Context, string, string) (map[string]any, error){
		"an error": func(context.Context, string, string) (map[string]any, error) {
			return map[string]any{"plan": "pro"}, errors.New("the billing service is down")
		},
		"too large": func(context.Context, string, string) (map[string]any, error) {
			return map[string]any{"plan": "pro", "notes": strings.Repeat("x", auth.MaxTokenClaimBytes)}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			s := authtest.NewServer(t, auth.Config{
				Logger:      slog.New(slog.NewTextHandler(&log, nil)),
				TokenClaims: auth.TokenClaims{Names: []string{"plan", "notes"}, Values: values},
			})
			c := s.NewClient(authtest.Header)
			if res := c.SignUp("ada@example.com", "a good password 1"); res.Status != "OK" {
				t.Fatalf("sign-up: %s", res.Body)
			}
			if up := decodeFrontToken(t, c.FrontToken).UP; up["plan"] != nil || up["notes"] != nil {
				t.Errorf("the token carries %v", up)
			}
			if !strings.Contains(log.String(), "the application's token claims left out") {
				t.Errorf("the log: %s", log.String())
			}
		})
	}
}

// New refuses names the library or the SDKs use, names that are not
// plain words, too many names, and names without a function.
func TestTokenClaimsNames(t *testing.T) {
	values := func(context.Context, string, string) (map[string]any, error) { return nil, nil }
	for _, tc := range []auth.TokenClaims{
		{Names: []string{"sub"}, Values: values},
		{Names: []string{"iat"}, Values: values},
		{Names: []string{"sessionHandle"}, Values: values},
		{Names: []string{"antiCsrfToken"}, Values: values},
		{Names: []string{"st-role"}, Values: values},
		{Names: []string{"st-anything"}, Values: values},
		{Names: []string{"plan", "plan"}, Values: values},
		{Names: []string{`a"b`}, Values: values},
		{Names: []string{""}, Values: values},
		{Names: []string{"a", "b", "c", "d", "e", "f", "g"}, Values: values},
		{Names: []string{"plan"}},
		{Names: []string{"Sub"}, Values: values},
		{Names: []string{"EXP"}, Values: values},
		{Names: []string{"TID"}, Values: values},
		{Names: []string{"ST-role"}, Values: values},
		{Names: []string{"plan", "Plan"}, Values: values},
		{Names: []string{"-"}, Values: values},
	} {
		if _, err := auth.New(auth.Config{Store: authtest.NewServer(t, auth.Config{}).AuthConfig.Store, TokenClaims: tc}); err == nil {
			t.Errorf("New took TokenClaims names %q", tc.Names)
		}
	}
}
