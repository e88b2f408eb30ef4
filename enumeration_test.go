package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/thirdparty"
	"golang.org/x/crypto/bcrypt"
)

// TestEnumerationSameAnswers: sign-in answers the same bytes, headers
// included, for an unknown email, a wrong password and a user without a
// password login; the reset request answers the same bytes for known,
// unknown and password-less emails. Each class is asked in rounds, so the
// answers stay alike when rate limits start to apply.
func TestEnumerationSameAnswers(t *testing.T) {
	t.Parallel()
	const wrong = "Enum-wrong-pw-1"
	for _, m := range authtest.Modes {
		t.Run("sign-in/"+m.String(), func(t *testing.T) {
			t.Parallel()
			s, known, noPW := enumServer(t)
			// Failures count per email (normalised) and client: each
			// class has an email of its own.
			_, known2 := s.SignedIn(authtest.Header)
			classes := []enumClass{
				{"unknown email", "nobody@example.com"},
				{"wrong password", known.Email},
				{"wrong password, email in other case", " " + strings.ToUpper(known2.Email) + " "},
				{"no password login", noPW.Email},
			}
			limited := 0
			for round := range 12 {
				var answers []*authtest.Response
				for _, c := range classes {
					res := s.NewClient(m).SignIn(c.email, wrong)
					if round == 0 && (res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"WRONG_CREDENTIALS_ERROR"}`) {
						t.Fatalf("%s: sign-in answered %d %s", c.name, res.StatusCode, res.Body)
					}
					wantNoTokens(t, res)
					answers = append(answers, res)
				}
				enumSame(t, fmt.Sprintf("sign-in round %d", round+1), classes, answers)
				if answers[0].StatusCode == http.StatusTooManyRequests {
					limited++
				}
			}
			t.Logf("%d of 12 rounds throttled, alike for every class", limited)
		})
		t.Run("reset request/"+m.String(), func(t *testing.T) {
			t.Parallel()
			s, known, noPW := enumServer(t)
			classes := []enumClass{
				{"known email", known.Email},
				{"known email in other case", " " + strings.ToUpper(known.Email) + " "},
				{"unknown email", "nobody@example.com"},
				{"no password login", noPW.Email},
			}
			// Four rounds pass the per-email limit of known emails and
			// stay under the per-client one.
			for round := range 4 {
				var answers []*authtest.Response
				for _, c := range classes {
					res := s.NewClient(m).RequestPasswordReset(c.email)
					if res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"OK"}` {
						t.Fatalf("%s, round %d: reset request answered %d %s", c.name, round+1, res.StatusCode, res.Body)
					}
					wantNoTokens(t, res)
					answers = append(answers, res)
				}
				enumSame(t, fmt.Sprintf("reset request round %d", round+1), classes, answers)
			}
			// The known user, and only they, got mail.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := s.Auth.Close(ctx); err != nil {
				t.Fatal(err)
			}
			msgs := s.Mailbox.Messages()
			if len(msgs) == 0 {
				t.Error("no reset email for the known user")
			}
			for _, msg := range msgs {
				if msg.To.Address != known.Email {
					t.Errorf("a reset email went to %s", msg.To.Address)
				}
			}
		})
	}
}

type enumClass struct{ name, email string }

// enumServer starts a server with a user who has a password and one who
// has none.
func enumServer(t *testing.T) (*authtest.Server, auth.User, storedUser) {
	t.Helper()
	st := memstore.New()
	s := authtest.NewServer(t, auth.Config{Store: st})
	_, known := s.SignedIn(authtest.Header)
	noPW := socialUser("enum-no-password", "nopassword@example.com").addTo(t, st)
	return s, known, noPW
}

// enumSame checks that every answer has the status, headers (but Date) and
// body of the first.
func enumSame(t *testing.T, what string, classes []enumClass, answers []*authtest.Response) {
	t.Helper()
	h0 := answers[0].Header.Clone()
	h0.Del("Date")
	for i, res := range answers[1:] {
		h := res.Header.Clone()
		h.Del("Date")
		if res.StatusCode != answers[0].StatusCode || !bytes.Equal(res.Body, answers[0].Body) || !reflect.DeepEqual(h, h0) {
			t.Errorf("%s: %s and %s answer differently:\n%d %v %s\n%d %v %s", what, classes[0].name, classes[i+1].name,
				answers[0].StatusCode, h0, answers[0].Body, res.StatusCode, h, res.Body)
		}
	}
}

// TestEnumerationTiming is a statistical check, with the real argon2id
// parameters, that sign-in takes as long for an unknown email as for a
// wrong password, and the reset request as long for a known email as for
// an unknown one: the medians of interleaved samples differ by less than
// 5 ms. It is slow and sensitive to the machine, so it runs only with
// AUTH_TIMING=1.
func TestEnumerationTiming(t *testing.T) {
	if os.Getenv("AUTH_TIMING") != "1" {
		t.Skip("statistical timing check with the real argon2id parameters, about 20 seconds: " +
			"run it with AUTH_TIMING=1 go test -count=1 -run EnumerationTiming -v .")
	}
	const (
		samples  = 200 // per class
		warmup   = 10  // per class, not counted
		maxDiff  = 5 * time.Millisecond
		password = "Enum-timing-pw-1"
		wrong    = "Enum-timing-pw-2"
	)
	st := memstore.New()
	a, err := auth.New(auth.Config{
		Store:   st, // and the default, real, argon2id parameters
		Email:   auth.EmailConfig{Mailer: mailer.Func(func(context.Context, mailer.Message) error { return nil })},
		AppURL:  "https://app.example.com",
		OnEvent: func(context.Context, auth.Event) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Close(ctx)
	})
	// Every request comes from an address of its own, as from a botnet,
	// so that per-client rate limits never answer in place of the flow
	// under test.
	var reqs atomic.Uint32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := reqs.Add(1)
		r.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:40000", byte(i>>16), byte(i>>8), byte(i))
		a.ServeHTTP(w, r)
	}))
	defer srv.Close()
	hc := srv.Client()

	post := func(path string, body []byte) (time.Duration, int, []byte) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("rid", "emailpassword")
		begin := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		d := time.Since(begin)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return d, res.StatusCode, b
	}
	form := func(fields ...string) []byte {
		var ff []map[string]string
		for i := 0; i < len(fields); i += 2 {
			ff = append(ff, map[string]string{"id": fields[i], "value": fields[i+1]})
		}
		b, _ := json.Marshal(map[string]any{"formFields": ff})
		return b
	}

	// One sign-up makes a hash with the real parameters; the known users
	// share it, each with an email of their own.
	if _, code, body := post("/auth/signup", form("email", "first@example.com", "password", password)); code != http.StatusOK ||
		!bytes.Contains(body, []byte(`"status":"OK"`)) {
		t.Fatalf("sign-up: %d %s", code, body)
	}
	first, err := st.Login(t.Context(), store.EmailPasswordKey("first@example.com"))
	if err != nil || !strings.HasPrefix(first.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("the hash %q, %v: not the real parameters", first.PasswordHash, err)
	}
	known := func(i int) string { return fmt.Sprintf("known%04d@example.com", i) }
	for i := range samples + warmup {
		passwordUser(fmt.Sprintf("enum-%d", i), known(i), first.PasswordHash).addTo(t, st)
	}

	// measure interleaves two classes in pairs, in random order within
	// each pair, and returns their durations.
	measure := func(what string, fa, fb func(i int) (time.Duration, int, []byte), wantA, wantB string) (da, db []time.Duration) {
		for i := range samples + warmup {
			x, y := fa, fb
			swap := rand.IntN(2) == 1
			if swap {
				x, y = fb, fa
			}
			d1, c1, b1 := x(i)
			d2, c2, b2 := y(i)
			if swap {
				d1, c1, b1, d2, c2, b2 = d2, c2, b2, d1, c1, b1
			}
			if c1 != http.StatusOK || string(b1) != wantA || c2 != http.StatusOK || string(b2) != wantB {
				t.Fatalf("%s, sample %d: answers %d %s and %d %s", what, i, c1, b1, c2, b2)
			}
			if i >= warmup {
				da, db = append(da, d1), append(db, d2)
			}
		}
		return da, db
	}
	report := func(what, nameA, nameB string, da, db []time.Duration) {
		ma, mb := enumMedian(da), enumMedian(db)
		diff := ma - mb
		t.Logf("%s: %d samples per class; median %s %v (IQR %v..%v), %s %v (IQR %v..%v); difference %v",
			what, len(da), nameA, ma.Round(time.Microsecond), enumQuantile(da, 0.25).Round(time.Microsecond),
			enumQuantile(da, 0.75).Round(time.Microsecond), nameB, mb.Round(time.Microsecond),
			enumQuantile(db, 0.25).Round(time.Microsecond), enumQuantile(db, 0.75).Round(time.Microsecond),
			diff.Round(time.Microsecond))
		if diff.Abs() >= maxDiff {
			t.Errorf("%s: the medians differ by %v, want under %v: timing tells %s from %s", what, diff, maxDiff, nameA, nameB)
		}
	}

	const wrongCreds = `{"status":"WRONG_CREDENTIALS_ERROR"}`
	begin := time.Now()
	unknownSignIn, wrongPassword := measure("sign-in",
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/signin", form("email", fmt.Sprintf("nobody%04d@example.com", i), "password", wrong))
		},
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/signin", form("email", known(i), "password", wrong))
		}, wrongCreds, wrongCreds)
	report("sign-in", "unknown email", "wrong password", unknownSignIn, wrongPassword)

	// Users with an imported bcrypt hash (cost 10, as usual), which
	// bcrypt checks slower than argon2id and refuses unhashed over 72
	// bytes (security review F15).
	bh, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	imported := func(i int) string { return fmt.Sprintf("imported%04d@example.com", i) }
	for i := range samples + warmup {
		passwordUser(fmt.Sprintf("enum-bcrypt-%d", i), imported(i), string(bh)).addTo(t, st)
	}
	long := strings.Repeat("x", 80)
	unknownShort, bcryptShort := measure("sign-in, bcrypt",
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/signin", form("email", fmt.Sprintf("nobody%04d@example.com", i), "password", wrong))
		},
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/signin", form("email", imported(i), "password", wrong))
		}, wrongCreds, wrongCreds)
	report("sign-in, bcrypt user", "unknown email", "bcrypt user's wrong password", unknownShort, bcryptShort)
	unknownLong, bcryptLong := measure("sign-in, bcrypt, 80 bytes",
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/signin", form("email", fmt.Sprintf("nobody%04d@example.com", i), "password", long))
		},
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/signin", form("email", imported(i), "password", long))
		}, wrongCreds, wrongCreds)
	report("sign-in, bcrypt user, 80-byte password", "unknown email", "bcrypt user", unknownLong, bcryptLong)

	const ok = `{"status":"OK"}`
	knownReset, unknownReset := measure("reset request",
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/user/password/reset/token", form("email", known(i)))
		},
		func(i int) (time.Duration, int, []byte) {
			return post("/auth/user/password/reset/token", form("email", fmt.Sprintf("nobody%04d@example.com", i)))
		}, ok, ok)
	report("reset request", "known email", "unknown email", knownReset, unknownReset)
	t.Logf("%d requests in %v", reqs.Load(), time.Since(begin).Round(time.Millisecond))
}

func enumMedian(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func enumQuantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[int(q*float64(len(s)-1))]
}

// TestEnumerationEveryEndpoint covers the endpoints besides sign-in and the
// reset request that take an email, or act on an account found by one:
// with account linking on, sign-in and the reset request answer alike
// whatever logins the address has; the send and the use of a verification
// link answer alike whether or not someone else has the address, and
// whatever became of a token; third-party sign-in with linking off answers
// the same for an address that has an account and one that has none; the
// email-exists endpoint, turned off, is absent alike for both.
//
// Left out, and why:
//   - POST /signup says "This email already exists" (and, under linking,
//     SIGN_UP_NOT_ALLOWED) for an address that has an account: the
//     protocol's sign-up form shows it. Sign-up takes from
//     RateLimits.ClientNewPasswords before it looks, so it is no faster a
//     way to ask than the email-exists endpoint.
//   - GET /emailpassword/email/exists and /signup/email/exists are the
//     protocol's explicit existence check, bounded by
//     RateLimits.ClientEmailChecks; Config.DisableEmailExists removes both.
//   - POST /signinup under account linking: whether a provider's address
//     joins an account, is refused, or makes a new user depends on who
//     has the address; that is what linking is. Whoever can make a
//     provider report any address learns whether it has an account.
//   - POST /signinup for an identity that signed in before: its
//     createdNewRecipeUser tells the identity's owner, and nobody else.
//   - GET /user/email/verify: the session's own login.
//   - /session/refresh and /signout take tokens, not addresses; the reason
//     of a 401 tells a token's holder why its session ended, never
//     whether an address has an account.
//   - /jwt/jwks.json, /loginmethods, /authorisationurl and the form_post
//     relay answer the same whoever the users are.
//   - GET /passwordless/email/exists, /passwordless/phonenumber/exists and
//     /signup/phonenumber/exists are the protocol's explicit existence
//     checks for passwordless logins, like the email-exists endpoint.
//   - POST /signinup/code/consume: its createdNewRecipeUser, and under
//     linking where the login goes, tell the inbox's owner, who alone
//     has the code. The passwordless requests before it are in
//     TestEnumerationPasswordless.
//   - The endpoints of multi-factor authentication (/mfa/..., /totp/...)
//     take a session and act on its user alone: TestEnumerationMFA shows
//     that nothing of another user reaches their answers.
func TestEnumerationEveryEndpoint(t *testing.T) {
	t.Parallel()
	t.Run("sign-in and reset request under account linking", func(t *testing.T) {
		t.Parallel()
		s, p := linkingServer(t, true, auth.Config{})
		_, known := s.SignedIn(authtest.Header)
		// A password user whose address a provider then vouched for:
		// joined or refused, as the linking rules say; it answers alike
		// either way.
		_, linked := s.SignedIn(authtest.Header)
		if err := s.Auth.SetEmailVerified(t.Context(), linked.ID, true); err != nil {
			t.Fatal(err)
		}
		p.SetIdentity("enum-linked", linked.Email, true)
		enumProviderSignIn(t, s, p)
		p.SetIdentity("enum-provider", "provider-only@example.com", true)
		enumProviderSignIn(t, s, p)
		p.SetIdentity("enum-unverified", "provider-unverified@example.com", false)
		enumProviderSignIn(t, s, p)
		classes := []enumClass{
			{"unknown email", "nobody@example.com"},
			{"password user", known.Email},
			{"password user a provider vouched for", linked.Email},
			{"provider login only", "provider-only@example.com"},
			{"unverified provider login only", "provider-unverified@example.com"},
		}
		for round := range 3 {
			var signIns, resets []*authtest.Response
			for _, c := range classes {
				res := s.NewClient(authtest.Header).SignIn(c.email, "Enum-wrong-pw-2")
				if round == 0 && (res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"WRONG_CREDENTIALS_ERROR"}`) {
					t.Fatalf("%s: sign-in answered %d %s", c.name, res.StatusCode, res.Body)
				}
				wantNoTokens(t, res)
				signIns = append(signIns, res)
				res = s.NewClient(authtest.Header).RequestPasswordReset(c.email)
				if res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"OK"}` {
					t.Fatalf("%s: reset request answered %d %s", c.name, res.StatusCode, res.Body)
				}
				resets = append(resets, res)
			}
			enumSame(t, fmt.Sprintf("sign-in round %d", round+1), classes, signIns)
			enumSame(t, fmt.Sprintf("reset request round %d", round+1), classes, resets)
		}
	})

	t.Run("email exists turned off", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{DisableEmailExists: true})
		_, known := s.SignedIn(authtest.Header)
		classes := []enumClass{{"known email", known.Email}, {"unknown email", "nobody@example.com"}}
		for _, path := range []string{"/auth/emailpassword/email/exists", "/auth/signup/email/exists"} {
			var answers []*authtest.Response
			for _, c := range classes {
				res := s.NewClient(authtest.Header).Get(path + "?email=" + url.QueryEscape(c.email))
				if res.StatusCode != http.StatusNotFound {
					t.Fatalf("%s for the %s: %d %s, want 404", path, c.name, res.StatusCode, res.Body)
				}
				answers = append(answers, res)
			}
			enumSame(t, path, classes, answers)
		}
	})

	for _, linking := range []bool{false, true} {
		t.Run(fmt.Sprintf("verification email, linking %v", linking), func(t *testing.T) {
			t.Parallel()
			s, p := linkingServer(t, linking, auth.Config{})
			shared, su := s.SignedIn(authtest.Header)
			alone, au := s.SignedIn(authtest.Header)
			// Someone else signs in with a provider that reports the
			// first user's address, unverified: a second user with it,
			// or a refusal, as linking says.
			p.SetIdentity("enum-shares-the-address", su.Email, false)
			enumProviderSignIn(t, s, p)
			classes := []enumClass{{"address someone else has", su.Email}, {"address nobody else has", au.Email}}
			// The second round is within the minute that one link per
			// user waits.
			for round, want := range []string{"OK", "GENERAL_ERROR"} {
				a, b := shared.SendVerificationEmail(), alone.SendVerificationEmail()
				if a.StatusCode != http.StatusOK || a.Status != want {
					t.Fatalf("send, round %d: %d %s, want %s", round+1, a.StatusCode, a.Body, want)
				}
				enumSame(t, fmt.Sprintf("send, round %d", round+1), classes, []*authtest.Response{a, b})
			}
			for _, m := range s.Mailbox.WaitFor(t, 2, 10*time.Second) {
				if m.To.Address != su.Email && m.To.Address != au.Email {
					t.Errorf("a verification email went to %s", m.To.Address)
				}
			}
		})
	}

	for _, linking := range []bool{false, true} {
		t.Run(fmt.Sprintf("email change request, linking %v", linking), func(t *testing.T) {
			t.Parallel()
			s, p := linkingServer(t, linking, auth.Config{EmailChange: emailchange.Config{Enabled: true}})
			_, known := s.SignedIn(authtest.Header)
			p.SetIdentity("enum-change-verified", "change-verified@example.com", true)
			enumProviderSignIn(t, s, p)
			p.SetIdentity("enum-change-unverified", "change-unverified@example.com", false)
			enumProviderSignIn(t, s, p)
			classes := []enumClass{
				{"unknown email", "nobody@example.com"},
				{"password user", known.Email},
				{"verified provider login", "change-verified@example.com"},
				{"unverified provider login", "change-unverified@example.com"},
			}
			// Each request is another user's, since a user asks once a
			// minute; each address gets its link whoever has it.
			var answers []*authtest.Response
			for _, c := range classes {
				asker, _ := s.SignedIn(authtest.Header)
				answers = append(answers, asker.Do(http.MethodPost, "/auth/user/email/change", map[string]any{"email": c.email}))
			}
			enumSame(t, "email change request", classes, answers)
			if answers[0].StatusCode != http.StatusOK || answers[0].Status != "OK" {
				t.Fatalf("the request: %d %s", answers[0].StatusCode, answers[0].Body)
			}
			sent := map[string]bool{}
			for _, m := range s.Mailbox.WaitFor(t, len(classes), 10*time.Second) {
				sent[m.To.Address] = true
			}
			for _, c := range classes {
				if !sent[c.email] {
					t.Errorf("no link went to the %s's address", c.name)
				}
			}
		})
	}

	t.Run("verification tokens", func(t *testing.T) {
		t.Parallel()
		s := authtest.NewServer(t, auth.Config{EmailVerification: emailverification.Config{Mode: emailverification.Optional}})
		c1, _ := s.SignedIn(authtest.Header)
		c2, _ := s.SignedIn(authtest.Header)
		used := verificationToken(t, s, c1, 1)
		if res := c1.VerifyEmail(used); res.Status != "OK" {
			t.Fatalf("verify: %s", res.Body)
		}
		expired := verificationToken(t, s, c2, 2)
		s.Clock.Advance(emailverification.DefaultTokenLifetime + time.Second)
		classes := []enumClass{
			{"never issued", lhRandomToken()},
			{"used up", used},
			{"expired", expired},
			{"not a token", "x"},
		}
		var answers []*authtest.Response
		for _, c := range classes {
			res := s.NewClient(authtest.Header).VerifyEmail(c.email)
			if string(res.Body) != `{"status":"EMAIL_VERIFICATION_INVALID_TOKEN_ERROR"}` {
				t.Fatalf("%s: %d %s", c.name, res.StatusCode, res.Body)
			}
			answers = append(answers, res)
		}
		enumSame(t, "verify", classes, answers)
	})

	t.Run("third-party sign-in, linking off", func(t *testing.T) {
		t.Parallel()
		s, p := linkingServer(t, false, auth.Config{})
		_, known := s.SignedIn(authtest.Header)
		classes := []enumClass{{"address with an account", known.Email}, {"address without one", "nobody@example.com"}}
		var answers []*authtest.Response
		for i, c := range classes {
			subject := fmt.Sprintf("enum-subject-%d", i)
			p.SetIdentity(subject, c.email, true)
			res := s.NewClient(authtest.Header).SignInWithProvider(p)
			if res.Status != "OK" || res.JSON["createdNewRecipeUser"] != true {
				t.Fatalf("%s: %d %s, want a new user", c.name, res.StatusCode, res.Body)
			}
			// What is the new user's own is the same in both but for
			// its name: its id, address and subject are masked, and
			// the tokens' headers compared by name.
			uid, _ := userObject(t, res)["id"].(string)
			masked := strings.NewReplacer(uid, "USER", c.email, "EMAIL", subject, "SUBJECT").Replace(string(res.Body))
			h := http.Header{}
			for k := range res.Header {
				h.Set(k, "")
			}
			answers = append(answers, &authtest.Response{StatusCode: res.StatusCode, Header: h, Body: []byte(masked)})
		}
		enumSame(t, "sign-in with a provider", classes, answers)
	})
}

// enumProviderSignIn signs in with the provider's current identity, as a
// stranger would, whatever the answer.
func enumProviderSignIn(t *testing.T, s *authtest.Server, p *authtest.Provider) {
	t.Helper()
	if res := s.NewClient(authtest.Header).SignInWithProvider(p); res.StatusCode != http.StatusOK {
		t.Fatalf("provider sign-in: %d %s", res.StatusCode, res.Body)
	}
}

// TestEnumerationPasswordless: asking for a passwordless code, asking
// again, and typing wrong codes answer the same bytes (the flow's random
// ids aside, which have the same form) for an address nobody has, one
// with a passwordless login, one with a password login only, one with a
// provider login only, and one whose user has both a password and a
// passwordless login; with account linking off and on, in rounds that
// go past the send and the failure allowances alike. Each address gets
// its code, whoever has it.
func TestEnumerationPasswordless(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		t.Run(fmt.Sprintf("linking %v", linking), func(t *testing.T) {
			t.Parallel()
			s, p := linkingServer(t, linking, auth.Config{TrustedProxies: loopbackProxy,
				Passwordless: passwordless.Config{Flow: passwordless.CodeAndLink}})
			plUser := "enum-passwordless@example.com"
			plWantUser(t, plSignIn(t, s, s.NewClient(authtest.Header), plUser), plUser, true)
			_, pwUser := s.SignedIn(authtest.Header)
			p.SetIdentity("enum-provider", "enum-provider@example.com", true)
			enumProviderSignIn(t, s, p)
			_, both := s.SignedInVerified(authtest.Header)
			if res := plSignIn(t, s, s.NewClient(authtest.Header), both.Email); res.Status != "OK" {
				t.Fatalf("passwordless sign-in of %s: %s", both.Email, res.Body)
			}
			// An hour on, the allowances the setup spent have grown
			// back: every class starts the rounds below with the same.
			s.Clock.Advance(time.Hour)
			classes := []enumClass{
				{"unknown address", "enum-nobody@example.com"},
				{"passwordless login", plUser},
				{"password login only", pwUser.Email},
				{"provider login only", "enum-provider@example.com"},
				{"password and passwordless logins", both.Email},
			}
			// Each class asks from a client address of its own, so that
			// no class meets the per-client allowance before another.
			clients := make([]*authtest.Client, len(classes))
			for i := range classes {
				clients[i] = fromClient(s.NewClient(authtest.Header), fmt.Sprintf("198.51.100.%d", i+1))
			}
			flows := make([]plFlow, len(classes))
			masked := func(res *authtest.Response, f plFlow) *authtest.Response {
				body := strings.NewReplacer(f.device, "DEVICE", f.pre, "PRE").Replace(string(res.Body))
				return &authtest.Response{StatusCode: res.StatusCode, Header: res.Header, Body: []byte(body)}
			}
			mails := len(s.Mailbox.Messages())
			// Rounds 1 and 2 ask for a code, rounds 3 to 5 for another
			// one of the same flow; round 6 is past the five a minute.
			sent := 0
			for round := range 6 {
				var answers []*authtest.Response
				for i, c := range classes {
					var res *authtest.Response
					if round < 2 {
						res = plPost(clients[i], "/signinup/code", map[string]any{"email": c.email})
						if res.Status == "OK" {
							flows[i] = plStarted(t, res)
						}
					} else {
						res = plResend(clients[i], flows[i])
					}
					wantNoTokens(t, res)
					answers = append(answers, masked(res, flows[i]))
				}
				want := "OK"
				if round == 5 {
					want = "GENERAL_ERROR"
				} else {
					sent++
				}
				if answers[0].StatusCode != http.StatusOK || !strings.Contains(string(answers[0].Body), `"status":"`+want+`"`) {
					t.Fatalf("round %d: %d %s, want %s", round+1, answers[0].StatusCode, answers[0].Body, want)
				}
				enumSame(t, fmt.Sprintf("passwordless send, round %d", round+1), classes, answers)
			}
			// Wrong codes: counted alike to the end of the flow, in a
			// second flow five minutes later, and in a third five minutes
			// after that, until they are refused alike past the failure
			// allowance (10, then one every 6 minutes).
			wrongs := 0
			for round := range 12 {
				var answers []*authtest.Response
				for i := range classes {
					if round == 5 || round == 10 {
						// A new flow, once the send allowance has one.
						if i == 0 {
							s.Clock.Advance(5 * time.Minute)
							sent++
						}
						flows[i] = plStarted(t, plPost(clients[i], "/signinup/code", map[string]any{"email": classes[i].email}))
					}
					res := plConsume(clients[i], flows[i], "000000")
					wantNoTokens(t, res)
					answers = append(answers, res)
				}
				if answers[0].Status == "INCORRECT_USER_INPUT_CODE_ERROR" || answers[0].Status == "RESTART_FLOW_ERROR" {
					wrongs++
				}
				enumSame(t, fmt.Sprintf("wrong code, round %d", round+1), classes, answers)
			}
			if wrongs != 11 {
				t.Errorf("%d rounds of wrong codes checked, want 11 (ten, then one six minutes after the first)", wrongs)
			}
			// Every address got every code sent, whoever has it.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := s.Auth.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, m := range s.Mailbox.Messages()[mails:] {
				got[m.To.Address]++
			}
			for _, c := range classes {
				if got[c.email] != sent {
					t.Errorf("%s: %d messages, want %d", c.name, got[c.email], sent)
				}
			}
		})
	}
}

// TestEnumerationPasskeys: asking for a passkey recovery link answers the
// same bytes, headers included, for an address nobody has, a passkey
// user's, a passkey user's that another user holds (the link is
// withheld), a password user's, a passwordless user's and a provider
// user's; with account linking off and on, in rounds that go past the
// per-address allowance of links. Only the passkey user whose address
// nobody else holds is mailed. And registration options for an address
// answer alike (their random challenge, ids and the address itself
// aside): in particular no passkey user's credentials are listed to
// exclude, and the user handle is new each time, whoever has the
// address.
//
// Left out, and why: POST /webauthn/signup says EMAIL_ALREADY_EXISTS_ERROR
// (and, under linking, SIGN_UP_NOT_ALLOWED) for an address a passkey user
// has, as the protocol's sign-up page shows it; GET /webauthn/email/exists
// is the protocol's explicit existence check for passkey logins; sign-in
// names no address.
func TestEnumerationPasskeys(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		t.Run(fmt.Sprintf("linking %v", linking), func(t *testing.T) {
			t.Parallel()
			p := authtest.NewProvider(t)
			s := pkServer(t, auth.Config{AccountLinking: linking, TrustedProxies: loopbackProxy,
				Passwordless: passwordless.Config{Flow: passwordless.Code},
				ThirdParty:   thirdparty.Config{Providers: []provider.Provider{p.Provider()}}})
			pkSignUp(t, s, authtest.Header, "enum-pk@example.com")
			pkSignUp(t, s, authtest.Header, "enum-pk-held@example.com")
			if res := plSignIn(t, s, s.NewClient(authtest.Header), "enum-pk-held@example.com"); res.Status != "OK" {
				t.Fatalf("passwordless sign-in: %s", res.Body)
			}
			_, pw := s.SignedIn(authtest.Header)
			if res := plSignIn(t, s, s.NewClient(authtest.Header), "enum-pl@example.com"); res.Status != "OK" {
				t.Fatalf("passwordless sign-in: %s", res.Body)
			}
			p.SetIdentity("enum-provider", "enum-tp@example.com", true)
			enumProviderSignIn(t, s, p)
			classes := []enumClass{
				{"unknown address", "enum-nobody@example.com"},
				{"passkey user", "enum-pk@example.com"},
				{"passkey user, another user holds the address", "enum-pk-held@example.com"},
				{"password user", pw.Email},
				{"passwordless user", "enum-pl@example.com"},
				{"provider user", "enum-tp@example.com"},
			}
			clients := make([]*authtest.Client, len(classes))
			for i := range classes {
				clients[i] = fromClient(s.NewClient(authtest.Header), fmt.Sprintf("198.51.100.%d", i+1))
			}
			mails := len(s.Mailbox.Messages())
			for round := range 5 {
				var answers []*authtest.Response
				for i, c := range classes {
					res := pkPost(clients[i], "/user/webauthn/reset/token", map[string]string{"email": c.email})
					if res.StatusCode != http.StatusOK || string(res.Body) != `{"status":"OK"}` {
						t.Fatalf("%s, round %d: %d %s", c.name, round+1, res.StatusCode, res.Body)
					}
					wantNoTokens(t, res)
					answers = append(answers, res)
				}
				enumSame(t, fmt.Sprintf("recovery request, round %d", round+1), classes, answers)
			}
			to := pkDrain(t, s)[mails:]
			if len(to) == 0 || len(to) > 3 || slices.ContainsFunc(to, func(a string) bool { return a != "enum-pk@example.com" }) {
				t.Errorf("recovery mail went to %q, want up to three messages (the allowance of an address) to the passkey user alone", to)
			}

			// Registration options.
			var answers []*authtest.Response
			for i, c := range classes {
				res := clients[i].PasskeyRegisterOptions(c.email)
				var o struct {
					Challenge, WebauthnGeneratedOptionsID string
					User                                  struct{ ID, Name string }
					ExcludeCredentials                    []any
				}
				if err := json.Unmarshal(res.Body, &o); err != nil || res.Status != "OK" || len(o.ExcludeCredentials) != 0 {
					t.Errorf("%s: registration options %s, want OK and nothing to exclude", c.name, res.Body)
				}
				masked := strings.NewReplacer(o.Challenge, "CHALLENGE", o.WebauthnGeneratedOptionsID, "ID", `"id":"`+o.User.ID+`"`, `"id":"HANDLE"`, c.email, "EMAIL").Replace(string(res.Body))
				h := res.Header.Clone()
				h.Del("Content-Length") // the addresses differ in length
				answers = append(answers, &authtest.Response{StatusCode: res.StatusCode, Header: h, Body: []byte(masked)})
				for _, other := range answers[:len(answers)-1] {
					if strings.Contains(string(other.Body), o.User.ID) {
						t.Errorf("%s: the user handle %s came before", c.name, o.User.ID)
					}
				}
			}
			enumSame(t, "registration options", classes, answers)
		})
	}
}

// TestEnumerationMFA: the endpoints of multi-factor authentication act on
// the session's own user, and what other users have set up never shows
// in their answers, nor is touched by them. A user's device list names
// their own devices only; another user's device names (set up or not)
// answer as names nobody has, to set up, to verify and to remove, and
// stay as they were; another user's current TOTP code and unused
// recovery code answer as made-up ones, and still work for their owner
// afterwards; a body naming another user's id changes nothing;
// UNKNOWN_USER_ID_ERROR answers exactly the users who have no device set
// up themselves; a new device's otpauth URI names its own user; one
// user's lockout locks nobody else; and /mfa/info, the device list and
// the recovery-code count answer the same bytes before and after another
// user sets everything up.
func TestEnumerationMFA(t *testing.T) {
	t.Parallel()
	s := authtest.NewServer(t, auth.Config{MFA: auth.MFAConfig{Factors: []string{auth.FactorTOTP}}})
	now := s.AuthConfig.Now
	post := func(c *authtest.Client, path string, body any) *authtest.Response {
		t.Helper()
		rid := "totp"
		if strings.HasPrefix(path, "/mfa/") {
			rid = "multifactorauth"
		}
		c.Header.Set("rid", rid)
		defer c.Header.Del("rid")
		return c.Do(http.MethodPost, "/auth"+path, body)
	}
	get := func(c *authtest.Client, method, path string) *authtest.Response {
		t.Helper()
		return c.Do(method, "/auth"+path, nil)
	}
	// fresh signs a new user in, with a device set up if withDevice.
	fresh := func(withDevice bool) (*authtest.Client, auth.User, string) {
		t.Helper()
		c, u := s.SignedIn(authtest.Header)
		secret := ""
		if withDevice {
			s.Clock.Advance(30 * time.Second) // a step of its own
			secret = c.SetUpTOTP()
		}
		return c, u, secret
	}
	// views are what a user sees of their own second factors.
	views := func(c *authtest.Client) []*authtest.Response {
		t.Helper()
		return []*authtest.Response{c.MFAInfo(), get(c, http.MethodGet, "/totp/device/list"), get(c, http.MethodGet, "/mfa/recovery-codes")}
	}

	b, bUser, _ := fresh(false)
	before := views(b)

	// A sets everything up: a device, another not set up, recovery codes.
	a, aUser, aSecret := fresh(true)
	if res := a.CreateTOTPDevice("spare"); res.Status != "OK" {
		t.Fatalf("spare device: %s", res.Body)
	}
	res := a.NewRecoveryCodes()
	codes, _ := res.JSON["codes"].([]any)
	if res.Status != "OK" || len(codes) != 10 {
		t.Fatalf("recovery codes: %s", res.Body)
	}
	aCode := codes[0].(string)
	aDevices := get(a, http.MethodGet, "/totp/device/list")
	if n := len(aDevices.JSON["devices"].([]any)); n != 2 {
		t.Fatalf("A's devices: %s", aDevices.Body)
	}

	// B's views are the same bytes.
	after := views(b)
	for i, what := range []string{"/mfa/info", "device list", "recovery-code count"} {
		enumSame(t, "B's "+what, []enumClass{{"before A set up", ""}, {"after", ""}}, []*authtest.Response{before[i], after[i]})
	}
	if string(after[1].Body) != `{"status":"OK","devices":[]}` || string(after[2].Body) != `{"status":"OK","remaining":0}` {
		t.Errorf("B sees %s and %s, want nothing of A's", after[1].Body, after[2].Body)
	}

	// A's device names, to B, are names nobody has.
	names := []enumClass{{"a name nobody has", "nobody"}, {"A's device set up", "TOTP Device 0"}, {"A's device not set up", "spare"}}
	var answers []*authtest.Response
	for _, n := range names {
		answers = append(answers, post(b, "/totp/device/verify", map[string]string{"deviceName": n.email, "totp": authtest.TOTPCode(aSecret, now())}))
	}
	enumSame(t, "B verifies a device", names, answers)
	if answers[0].Status != "UNKNOWN_DEVICE_ERROR" {
		t.Errorf("B verifies a device nobody has: %s", answers[0].Body)
	}
	answers = nil
	for _, n := range names {
		answers = append(answers, post(b, "/totp/device/remove", map[string]string{"deviceName": n.email}))
	}
	enumSame(t, "B removes a device", names, answers)
	if string(answers[0].Body) != `{"status":"OK","didDeviceExist":false}` {
		t.Errorf("B removes a device nobody has: %s", answers[0].Body)
	}
	if got := get(a, http.MethodGet, "/totp/device/list"); !bytes.Equal(got.Body, aDevices.Body) {
		t.Errorf("A's devices after B's requests: %s, want %s", got.Body, aDevices.Body)
	}

	// A's current code and recovery code, to users without a device,
	// with one, and with one and a body naming A: as made-up ones.
	madeUp := func() string {
		for n := 271828; ; n++ {
			w := fmt.Sprintf("%06d", n%1_000_000)
			if w != authtest.TOTPCode(aSecret, now()) && w != authtest.TOTPCode(aSecret, now().Add(-30*time.Second)) && w != authtest.TOTPCode(aSecret, now().Add(30*time.Second)) {
				return w
			}
		}
	}
	for _, withDevice := range []bool{false, true} {
		var classes []enumClass
		answers = nil
		for _, tc := range []struct {
			name string
			body func() map[string]any
		}{
			{"a made-up code", func() map[string]any { return map[string]any{"totp": madeUp()} }},
			{"A's current code", func() map[string]any { return map[string]any{"totp": authtest.TOTPCode(aSecret, now())} }},
			{"A's current code and A's id", func() map[string]any {
				return map[string]any{"totp": authtest.TOTPCode(aSecret, now()), "userId": aUser.ID, "recipeUserId": aUser.ID}
			}},
		} {
			c, _, _ := fresh(withDevice)
			c2 := s.NewClient(authtest.Header) // a second session, which must complete TOTP
			if res := c2.SignIn(enumEmailOf(t, s, c), authtest.Password); res.Status != "OK" {
				t.Fatalf("sign-in: %s", res.Body)
			}
			classes = append(classes, enumClass{tc.name, ""})
			answers = append(answers, post(c2, "/totp/verify", tc.body()))
		}
		want := `{"status":"UNKNOWN_USER_ID_ERROR"}`
		if withDevice {
			want = `{"status":"INVALID_TOTP_ERROR","currentNumberOfFailedAttempts":1,"maxNumberOfFailedAttempts":5}`
		}
		enumSame(t, fmt.Sprintf("TOTP verify, own device set up %v", withDevice), classes, answers)
		if string(answers[0].Body) != want {
			t.Errorf("TOTP verify, own device set up %v: %s, want %s", withDevice, answers[0].Body, want)
		}
	}
	classes := []enumClass{{"a made-up recovery code", ""}, {"A's unused recovery code", ""}, {"A's code and A's id", ""}}
	answers = nil
	for _, body := range []map[string]any{{"code": "abcd-efgh-ijkl-mnop"}, {"code": aCode}, {"code": aCode, "userId": aUser.ID}} {
		c, _, _ := fresh(true)
		if res := c.NewRecoveryCodes(); res.Status != "OK" {
			t.Fatalf("recovery codes: %s", res.Body)
		}
		answers = append(answers, post(c, "/mfa/recovery-code/verify", body))
	}
	enumSame(t, "recovery code verify", classes, answers)
	if string(answers[0].Body) != `{"status":"INVALID_RECOVERY_CODE_ERROR","currentNumberOfFailedAttempts":1,"maxNumberOfFailedAttempts":5}` {
		t.Errorf("a made-up recovery code: %s", answers[0].Body)
	}

	// A's code and recovery code still work for A, and nobody's failures
	// counted against A.
	a2 := s.NewClient(authtest.Header)
	if res := a2.SignIn(aUser.Email, authtest.Password); res.Status != "OK" {
		t.Fatalf("A signs in: %s", res.Body)
	}
	if res := a2.CompleteTOTP(aSecret); res.Status != "OK" {
		t.Errorf("A's current code, after others sent it: %s", res.Body)
	}
	a3 := s.NewClient(authtest.Header)
	a3.SignIn(aUser.Email, authtest.Password)
	if res := a3.UseRecoveryCode(aCode); string(res.Body) != `{"status":"OK","remaining":9}` {
		t.Errorf("A's recovery code, after others sent it: %s", res.Body)
	}

	// B locks themselves out; A is not locked.
	b.SetUpTOTP()
	b2 := s.NewClient(authtest.Header)
	b2.SignIn(bUser.Email, authtest.Password)
	for range 5 {
		b2.VerifyTOTP(madeUp())
	}
	if res := b2.VerifyTOTP(madeUp()); res.Status != "LIMIT_REACHED_ERROR" {
		t.Fatalf("B after five wrong codes: %s", res.Body)
	}
	a4 := s.NewClient(authtest.Header)
	a4.SignIn(aUser.Email, authtest.Password)
	if res := a4.VerifyTOTP(madeUp()); string(res.Body) != `{"status":"INVALID_TOTP_ERROR","currentNumberOfFailedAttempts":1,"maxNumberOfFailedAttempts":5}` {
		t.Errorf("A's first wrong code while B is locked out: %s", res.Body)
	}

	// A new device's URI names its own user.
	c, u, _ := fresh(false)
	res = c.CreateTOTPDevice("")
	qr, _ := res.JSON["qrCodeString"].(string)
	if !strings.Contains(qr, url.PathEscape(u.Email)) || strings.Contains(qr, url.PathEscape(aUser.Email)) || strings.Contains(qr, url.PathEscape(bUser.Email)) {
		t.Errorf("the otpauth URI of %s's device: %s", u.Email, qr)
	}
}

// enumEmailOf is the email of the user of c's session on s.
func enumEmailOf(t *testing.T, s *authtest.Server, c *authtest.Client) string {
	t.Helper()
	u, err := s.Auth.UserByID(t.Context(), userIDOf(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return u.Email
}
