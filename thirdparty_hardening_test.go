package auth_test

// Tests of what third-party sign-in refuses at its edges: where the
// form_post relay may send a code, which provider emails are taken as
// addresses, and which spellings of a redirect URI are one.

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
)

// relayed is what the form_post relay answered: its status, Location and
// body.
type relayed struct {
	status   int
	location string
	body     string
}

// postCallback posts a provider's form_post callback carrying code and a
// state that names frontend, as Apple does, and returns the answer
// without following it.
func postCallback(t *testing.T, s *authtest.Server, id, code, frontend string) relayed {
	t.Helper()
	state := base64.StdEncoding.EncodeToString([]byte(`{"frontendRedirectURI":"` + frontend + `"}`))
	form := url.Values{"code": {code}, "state": {state}}
	req, _ := http.NewRequest("POST", s.URL+"/auth/callback/"+id, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://appleid.apple.com")
	hc := s.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return relayed{res.StatusCode, res.Header.Get("Location"), string(body)}
}

// The relay hands the provider's code to the SDK's callback page of the
// provider that posted it, on an origin of the frontend, and to no other
// page: another page of the app may leak its URL, and the code with it.
func TestFormPostRelaysOnlyToCallbackPage(t *testing.T) {
	t.Parallel()
	const other = "https://admin.example.com"
	apple := &scripted{id: "apple", formPost: true}
	google := &scripted{id: "google"}
	s := authtest.NewServer(t, auth.Config{
		AllowedOrigins: []string{other},
		ThirdParty:     thirdparty.Config{Providers: []provider.Provider{apple, google}},
	})
	app := s.AuthConfig.AppURL

	for _, frontend := range []string{app + "/auth/callback/apple", other + "/auth/callback/apple"} {
		got := postCallback(t, s, "apple", "good-code", frontend)
		loc, err := url.Parse(got.location)
		if got.status != http.StatusSeeOther || err != nil ||
			loc.Scheme+"://"+loc.Host+loc.EscapedPath() != frontend || loc.Query().Get("code") != "good-code" {
			t.Errorf("relay to %s: %d Location %q, want 303 to it with the code", frontend, got.status, got.location)
		}
	}

	for _, frontend := range []string{
		app + "/logout?redirect=//evil.example",
		app + "/some/other/page?next=https://evil.example",
		app + "//evil.example/x",
		app + "/auth/callback/google",
		other + "/auth/callback/google",
		app + "/auth/callback/apple?next=//evil.example",
		app + "/auth/callback/apple/",
		app + "/auth/callback/apple#",
		app + "/auth/callback/%61pple",
		app + "/auth/callback/apple/../../logout",
		strings.Replace(app, "https://", "HTTPS://", 1) + "/auth/callback/apple",
	} {
		got := postCallback(t, s, "apple", "leaked-code", frontend)
		if got.status != http.StatusBadRequest || got.location != "" || strings.Contains(got.body, "leaked-code") {
			t.Errorf("relay to %s: %d Location %q body %q, want 400 and the code relayed nowhere", frontend, got.status, got.location, got.body)
		}
	}
}

// A provider's email is an address only if normalising it changes no more
// than letter case: a sign that Unicode maps onto a letter (KELVIN SIGN
// onto K) names another mailbox than the letter's, and the provider's
// proof for the one is no proof for the other.
func TestThirdPartyEmailNotFoldedOntoAnother(t *testing.T) {
	t.Parallel()
	const kate = "kate@example.com"
	for _, linking := range []bool{false, true} {
		t.Run(map[bool]string{false: "linking off", true: "linking on"}[linking], func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			s, p := linkingServer(t, linking, auth.Config{Store: st})
			_, kateID := signUpWith(t, s, authtest.Header, kate, authtest.Password)
			if err := s.Auth.SetEmailVerified(t.Context(), kateID, true); err != nil {
				t.Fatal(err)
			}
			for sub, email := range map[string]string{
				"kelvin":     "\u212aate@example.com",  // KELVIN SIGN: NFC makes it K
				"angstrom":   "\u212bsa@example.com",   // ANGSTROM SIGN: NFC makes it Å
				"ohm":        "\u2126mega@example.com", // OHM SIGN: NFC makes it Ω
				"dotted-i":   "\u0130rene@example.com", // İ lower-cases to i
				"decomposed": "ka\u0301te@example.com", // NFD á
			} {
				p.SetIdentity(sub, email, true)
				res := s.NewClient(authtest.Header).SignInWithProvider(p)
				wantReply(t, "provider email "+sub, res.StatusCode, res.Body, http.StatusOK, `{"status":"NO_EMAIL_GIVEN_BY_PROVIDER"}`)
				if l, err := st.Login(t.Context(), store.LoginKey{Method: store.MethodThirdParty, ThirdParty: authtest.ProviderID, Subject: sub}); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("provider email %s: login %+v (%v), want none", sub, l, err)
				}
			}
			if u, err := s.Auth.UserByID(t.Context(), kateID); err != nil || len(u.LoginMethods) != 1 {
				t.Errorf("%s's user: %+v (%v), want its one password login", kate, u, err)
			}

			p.SetIdentity("upper", "KATE@EXAMPLE.COM", true)
			res := s.NewClient(authtest.Header).SignInWithProvider(p)
			wantOK(t, "provider email KATE@EXAMPLE.COM", res)
			l, err := st.Login(t.Context(), store.LoginKey{Method: store.MethodThirdParty, ThirdParty: authtest.ProviderID, Subject: "upper"})
			if err != nil || l.Email != kate {
				t.Errorf("login of KATE@EXAMPLE.COM: %+v (%v), want email %s", l, err, kate)
			}
		})
	}
}

// A redirect URI is taken only as the frontend spells its callback page:
// an empty fragment or an upper-case scheme is another string, which the
// provider would be sent byte for byte.
func TestThirdPartyRedirectURISpelling(t *testing.T) {
	t.Parallel()
	const (
		app   = "https://app.example.com"
		local = "http://localhost:5173"
	)
	variants := []string{
		app + "/auth/callback/idp#",
		"HTTPS://app.example.com/auth/callback/idp",
		"Https://app.example.com/auth/callback/idp",
		local + "/auth/callback/idp#",
		"HTTP://localhost:5173/auth/callback/idp",
	}
	// No server hands out a verifier for these spellings (New refuses
	// them in RedirectURIs too), so /signinup gets the verifier of the
	// proper page with each of them.
	checker, p := tpServer(t, auth.Config{AppURL: app, AllowedOrigins: []string{local}})
	cc := checker.NewClient(authtest.Header)
	good := app + "/auth/callback/idp"
	for i, redirect := range variants {
		res := cc.Get("/auth/authorisationurl?" + url.Values{"thirdPartyId": {"idp"}, "redirectURIOnProviderDashboard": {redirect}}.Encode())
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("authorisationurl with redirect %q: %d %s, want 400", redirect, res.StatusCode, res.Body)
		}
		res = cc.Do("POST", "/auth/signinup", signInUpBody("idp", redirect, "code-"+string(rune('a'+i)), authorisationURL(t, cc, "idp", good)))
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("signinup with redirect %q: %d %s, want 400", redirect, res.StatusCode, res.Body)
		}
	}
	if res := cc.Do("POST", "/auth/signinup", signInUpBody("idp", good, "code-good", authorisationURL(t, cc, "idp", good))); res.Status != "OK" {
		t.Fatalf("sign-in with the proper page: %d %s", res.StatusCode, res.Body)
	}
	if n := p.exchanged(); n != 1 {
		t.Errorf("the provider redeemed %d codes, want 1: the refused redirect URIs must not reach it", n)
	}
}

// The relay also sends a code to a frontend page the configuration lists,
// for an app whose callback page is not the SDK's default; and a listed
// redirect URI must be spelt as the provider will compare it.
func TestFormPostRelaysToListedPage(t *testing.T) {
	t.Parallel()
	apple := &scripted{id: "apple", formPost: true}
	s := authtest.NewServer(t, auth.Config{
		AppURL:     "https://app.example.com",
		ThirdParty: thirdparty.Config{Providers: []provider.Provider{apple}, RedirectURIs: []string{"https://app.example.com/login/callback/apple"}},
	})
	got := postCallback(t, s, "apple", "good-code", "https://app.example.com/login/callback/apple")
	if loc, err := url.Parse(got.location); got.status != http.StatusSeeOther || err != nil || loc.Path != "/login/callback/apple" || loc.Query().Get("code") != "good-code" {
		t.Errorf("relay to the listed page: %d Location %q, want 303 to it with the code", got.status, got.location)
	}
	if got := postCallback(t, s, "apple", "leaked-code", "https://app.example.com/login/other"); got.status != http.StatusBadRequest || got.location != "" {
		t.Errorf("relay to an unlisted page: %d Location %q, want 400", got.status, got.location)
	}

	for _, uri := range []string{
		"https://app.example.com/auth/callback/apple#",
		"https://app.example.com/auth/callback/apple#x",
		"HTTPS://app.example.com/auth/callback/apple",
		"Https://app.example.com/auth/callback/apple",
		"https://user@app.example.com/auth/callback/apple",
		"/auth/callback/apple",
		"javascript:alert(1)",
	} {
		_, err := auth.New(auth.Config{
			Store:      memstore.New(),
			AppURL:     "https://app.example.com",
			ThirdParty: thirdparty.Config{Providers: []provider.Provider{apple}, RedirectURIs: []string{uri}},
		})
		if err == nil || !strings.Contains(err.Error(), "RedirectURIs") {
			t.Errorf("New with RedirectURIs [%q]: %v, want an error naming Config.ThirdParty.RedirectURIs", uri, err)
		}
	}
}
