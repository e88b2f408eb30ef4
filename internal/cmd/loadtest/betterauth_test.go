package main

import (
	"net/http"
	"testing"
)

func TestParseFlagsBetterAuth(t *testing.T) {
	pg := "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	cfg, err := parseFlags([]string{"-db", pg, "-phases", "signin,signin-betterauth", "-betterauth", "x/server.mjs"})
	if err != nil || cfg.betterauth != "x/server.mjs" || len(cfg.phases) != 2 || cfg.phases[1] != "signin-betterauth" {
		t.Errorf("parseFlags = %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"-db", pg, "-phases", "signin-betterauth"},
		{"-db", "memory", "-phases", "signin-betterauth", "-betterauth", "x/server.mjs"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestExpectBAToken(t *testing.T) {
	for _, c := range []struct {
		a    answer
		want string
	}{
		{answer{code: http.StatusOK, body: []byte(`{"redirect":false,"token":"abc","user":{}}`)}, ""},
		{answer{code: http.StatusOK, body: []byte(`{}`)}, "200 without token"},
		{answer{code: http.StatusUnauthorized, body: []byte(`{"code":"INVALID_EMAIL_OR_PASSWORD"}`)}, "401"},
	} {
		if got := expectBAToken(c.a, nil).err; got != c.want {
			t.Errorf("expectBAToken(%d %s) = %q, want %q", c.a.code, c.a.body, got, c.want)
		}
	}
	if got := baCredentials("a@example.com", ""); got != `{"email":"a@example.com","password":"load test 1"}` {
		t.Errorf("baCredentials = %s", got)
	}
}
