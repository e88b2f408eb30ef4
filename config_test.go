package auth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
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
		"partial hashing parameters":   {Store: st, EmailPassword: emailpassword.Config{Hashing: emailpassword.Hashing{Memory: 64 * 1024}}},
		"SameSite=None without Secure": {Store: st, Cookie: auth.CookieConfig{SameSite: http.SameSiteNoneMode, InsecureAllowHTTP: true}},
		"providers without AppURL":     {Store: st, ThirdParty: thirdparty.Config{Providers: []provider.Provider{idp("a")}}},
		"two providers with one id": {Store: st, AppURL: "https://app.example.com",
			ThirdParty: thirdparty.Config{Providers: []provider.Provider{idp("a"), idp("a")}}},
		"a nil provider": {Store: st, AppURL: "https://app.example.com",
			ThirdParty: thirdparty.Config{Providers: []provider.Provider{nil}}},
		"a provider without an id": {Store: st, AppURL: "https://app.example.com",
			ThirdParty: thirdparty.Config{Providers: []provider.Provider{idp("")}}},
		"APIURL not a URL": {Store: st, AppURL: "https://app.example.com",
			ThirdParty: thirdparty.Config{Providers: []provider.Provider{idp("a")}, APIURL: "api.example.com"}},
		"negative provider timeout": {Store: st, AppURL: "https://app.example.com",
			ThirdParty: thirdparty.Config{Providers: []provider.Provider{idp("a")}, Timeout: -time.Second}},
	} {
		if _, err := auth.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	if _, err := auth.New(auth.Config{Store: st, AppURL: "https://app.example.com",
		ThirdParty: thirdparty.Config{Providers: []provider.Provider{idp("a"), idp("b")}}}); err != nil {
		t.Errorf("two providers: %v", err)
	}
	if _, err := auth.New(auth.Config{Store: st, BasePath: "/api/auth/"}); err != nil {
		t.Errorf("a base path with a trailing slash: %v", err)
	}
}

// idp is a provider that is never asked anything.
func idp(id string) provider.Provider { return &scripted{id: id} }
