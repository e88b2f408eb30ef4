package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store/memstore"
)

// -secret, or DEMO_SECRET, seals the keys; a list rotates; the flag wins.
func TestParseOptionsSecret(t *testing.T) {
	const a, b = "0vQm3n9cXb7yVJ0qkq2cY3G6o1rj3M3sSx8b2gq1Z9Q=", "hU7c2Zk1pX0w9qF4bV8yN3mR6tL5sJ2dG1aE0iO7uYc="
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if o, err := parseOptions(nil, getenv); err != nil || o.secrets != nil {
		t.Fatalf("default: %q, %v; want no secrets", o.secrets, err)
	}
	env["DEMO_SECRET"] = b + ", " + a
	if o, err := parseOptions(nil, getenv); err != nil || !slices.Equal(o.secrets, []string{b, a}) {
		t.Errorf("DEMO_SECRET: %q, %v; want [b a]", o.secrets, err)
	}
	if o, err := parseOptions([]string{"-secret", a}, getenv); err != nil || !slices.Equal(o.secrets, []string{a}) {
		t.Errorf("-secret over DEMO_SECRET: %q, %v; want [a]", o.secrets, err)
	}

}

// A demo started with a secret that does not open the stored keys stops
// at start, without showing the secret.
func TestSecretWrongStopsDemo(t *testing.T) {
	const a, b = "0vQm3n9cXb7yVJ0qkq2cY3G6o1rj3M3sSx8b2gq1Z9Q=", "hU7c2Zk1pX0w9qF4bV8yN3mR6tL5sJ2dG1aE0iO7uYc="
	st := memstore.New()
	logger := slog.New(slog.DiscardHandler)
	m := mailer.NewLog(io.Discard)
	o, err := parseOptions([]string{"-secret", a}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	first, err := newAuth(o, st, m, io.Discard, logger)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/auth/signup", bytes.NewReader(authtest.Credentials("ada@example.com", "correct horse 1")))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	first.ServeHTTP(rec, req)
	if rec.Header().Get("st-access-token") == "" {
		t.Fatalf("sign-up with a secret: %d %s", rec.Code, rec.Body)
	}

	o.secrets = []string{b}
	_, err = newAuth(o, st, m, io.Discard, logger)
	if err == nil || !strings.Contains(err.Error(), "wrong secret") {
		t.Fatalf("a demo with another secret: %v, want a wrong-secret error", err)
	}
	if strings.Contains(err.Error(), a) || strings.Contains(err.Error(), b) {
		t.Errorf("the error shows a secret: %v", err)
	}
	o.secrets = nil
	if _, err := newAuth(o, st, m, io.Discard, logger); err == nil || !strings.Contains(err.Error(), "Config.Secrets") {
		t.Fatalf("a demo without the secret: %v, want an error naming Config.Secrets", err)
	}
}
