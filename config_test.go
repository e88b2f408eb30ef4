package auth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store/memstore"
)

func TestNewRefusesBadConfig(t *testing.T) {
	st := memstore.New()
	for name, cfg := range map[string]auth.Config{
		"no store":                     {},
		"relative base path":           {Store: st, BasePath: "auth"},
		"negative access lifetime":     {Store: st, AccessTokenLifetime: -time.Second},
		"negative max body":            {Store: st, MaxBodyBytes: -1},
		"access outlives refresh":      {Store: st, AccessTokenLifetime: 2 * time.Hour, RefreshTokenLifetime: time.Hour},
		"reuse window over a minute":   {Store: st, RefreshReuseWindow: 2 * time.Minute},
		"negative reuse window":        {Store: st, RefreshReuseWindow: -time.Second},
		"unknown algorithm":            {Store: st, SigningAlgorithm: "none"},
		"RS256 not offered":            {Store: st, SigningAlgorithm: "RS256"},
		"partial hashing parameters":   {Store: st, Password: auth.PasswordConfig{Hashing: auth.PasswordHashing{Memory: 64 * 1024}}},
		"SameSite=None without Secure": {Store: st, Cookie: auth.CookieConfig{SameSite: http.SameSiteNoneMode, InsecureAllowHTTP: true}},
	} {
		if _, err := auth.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	if _, err := auth.New(auth.Config{Store: st, BasePath: "/api/auth/"}); err != nil {
		t.Errorf("a base path with a trailing slash: %v", err)
	}
}
