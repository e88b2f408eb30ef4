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
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
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
