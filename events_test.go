package auth_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// levelRecorder keeps the level of each "auth event" record by kind.
type levelRecorder struct {
	mu     sync.Mutex
	levels map[string]slog.Level
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler            { return h }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "kind" {
			h.mu.Lock()
			h.levels[a.Value.String()] = r.Level
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestEventLogLevels: refreshes, the most frequent event, are logged at
// Debug so that sign-ins and revocations stand out at Info.
func TestEventLogLevels(t *testing.T) {
	rec := &levelRecorder{levels: map[string]slog.Level{}}
	s := authtest.NewServer(t, auth.Config{Logger: slog.New(rec)})
	c, _ := s.SignedIn(authtest.Header)
	if res := c.Refresh(); res.StatusCode != 200 {
		t.Fatalf("refresh: %d", res.StatusCode)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for kind, want := range map[auth.EventKind]slog.Level{
		auth.EventSignUp:  slog.LevelInfo,
		auth.EventSignIn:  slog.LevelInfo,
		auth.EventRefresh: slog.LevelDebug,
	} {
		if got, ok := rec.levels[string(kind)]; !ok || got != want {
			t.Errorf("%s logged at %v (logged: %v), want %v", kind, got, ok, want)
		}
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []auth.Event
	s := authtest.NewServer(t, auth.Config{OnEvent: func(_ context.Context, e auth.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	take := func() []auth.Event {
		mu.Lock()
		defer mu.Unlock()
		e := events
		events = nil
		return e
	}
	type ev struct {
		kind          auth.EventKind
		user, session string
		http          bool
		reason        auth.Reason
	}
	want := func(t *testing.T, step string, want ...ev) {
		t.Helper()
		got := take()
		if len(got) != len(want) {
			t.Fatalf("%s: events %+v, want %+v", step, got, want)
		}
		for i, e := range got {
			w := want[i]
			// Sign-ups and sign-ins, failed ones too, name their login
			// method.
			method := ""
			if w.kind == auth.EventSignUp || w.kind == auth.EventSignIn || w.kind == auth.EventSignInFailed {
				method = "emailpassword"
			}
			if e.Kind != w.kind || e.UserID != w.user || e.SessionHandle != w.session ||
				(e.RemoteAddr != "") != w.http || !e.Time.Equal(s.Clock.Now()) || e.Method != method || e.ThirdPartyID != "" ||
				e.Reason != w.reason {
				t.Errorf("%s: event %d = %+v, want %+v", step, i, e, w)
			}
		}
	}
	ctx := t.Context()
	email := "events@example.com"

	c := s.NewClient(authtest.Header)
	res := c.SignUp(email, authtest.Password)
	uid, _ := res.JSON["user"].(map[string]any)["id"].(string)
	h1 := handleOf(t, c)
	want(t, "sign-up", ev{auth.EventSignUp, uid, "", true, ""}, ev{auth.EventSignIn, uid, h1, true, ""})

	s.NewClient(authtest.Header).SignIn(email, wrongPassword)
	want(t, "wrong password", ev{auth.EventSignInFailed, uid, "", true, ""})
	s.NewClient(authtest.Header).SignIn("nobody@example.com", wrongPassword)
	want(t, "unknown email", ev{auth.EventSignInFailed, "", "", true, ""})

	c2 := s.NewClient(authtest.Cookie)
	c2.SignIn(email, authtest.Password)
	h2 := handleOf(t, c2)
	want(t, "sign-in", ev{auth.EventSignIn, uid, h2, true, ""})

	s.Clock.Advance(time.Minute)
	c.Refresh()
	want(t, "refresh", ev{auth.EventRefresh, uid, h1, true, ""})

	c.SignOut()
	want(t, "sign-out", ev{auth.EventSignOut, uid, h1, true, ""})

	if err := s.Auth.RevokeSession(ctx, h2); err != nil {
		t.Fatal(err)
	}
	want(t, "RevokeSession", ev{auth.EventSessionRevoked, uid, h2, false, ""})

	c3 := s.NewClient(authtest.Body)
	c3.SignIn(email, authtest.Password)
	h3 := handleOf(t, c3)
	_, r0 := c3.Tokens()
	c3.Refresh()
	take()
	c3.SetTokens("", r0)
	c3.Refresh()
	want(t, "theft", ev{auth.EventTokenTheft, uid, h3, true, auth.ReasonTheftPrevious},
		ev{auth.EventSessionRefused, "", "", true, auth.ReasonTheftPrevious})

	// Every 401 is counted, with its reason.
	c3.SetTokens("", r0)
	c3.Refresh()
	s.NewClient(authtest.Header).Get("/api/session")
	want(t, "refusals", ev{auth.EventSessionRefused, "", "", true, auth.ReasonTokenTheft},
		ev{auth.EventSessionRefused, "", "", true, auth.ReasonNoToken})

	c4 := s.NewClient(authtest.Header)
	c4.SignIn(email, authtest.Password)
	s.Clock.Advance(time.Second)
	c5 := s.NewClient(authtest.Header)
	c5.SignIn(email, authtest.Password)
	h4, h5 := handleOf(t, c4), handleOf(t, c5)
	take()
	if n, err := s.Auth.RevokeAllSessions(ctx, uid); err != nil || n != 2 {
		t.Fatalf("RevokeAllSessions: %d %v", n, err)
	}
	want(t, "RevokeAllSessions", ev{auth.EventSessionRevoked, uid, h5, false, ""}, ev{auth.EventSessionRevoked, uid, h4, false, ""})
}

// TestEventUserAgent: a sign-in's event carries the client's User-Agent,
// for an account page to say where a session started; a header made to
// be long is cut to 256 bytes of whole characters, and one that is not
// UTF-8 is mended. Go API calls have none.
func TestEventUserAgent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	agents := map[auth.EventKind][]string{}
	s := authtest.NewServer(t, auth.Config{OnEvent: func(_ context.Context, e auth.Event) {
		mu.Lock()
		agents[e.Kind] = append(agents[e.Kind], e.UserAgent)
		mu.Unlock()
	}})
	last := func(kind auth.EventKind) string {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		as := agents[kind]
		if len(as) == 0 {
			t.Fatalf("no %s event", kind)
		}
		return as[len(as)-1]
	}
	const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	c := s.NewClient(authtest.Header)
	c.Header.Set("User-Agent", firefox)
	c.SignUp("agent@example.com", authtest.Password)
	if got := last(auth.EventSignIn); got != firefox {
		t.Errorf("sign-in UserAgent %q, want %q", got, firefox)
	}

	long := strings.Repeat("a", 255) + "é" + strings.Repeat("b", 1000) // é straddles byte 256
	c2 := s.NewClient(authtest.Header)
	c2.Header.Set("User-Agent", long)
	c2.SignIn("agent@example.com", authtest.Password)
	if got := last(auth.EventSignIn); got != strings.Repeat("a", 255) {
		t.Errorf("long UserAgent kept as %d bytes %q…, want the 255 bytes before the cut character", len(got), got[:min(len(got), 20)])
	}

	c3 := s.NewClient(authtest.Header)
	c3.Header.Set("User-Agent", "Bad\xffAgent")
	c3.SignIn("agent@example.com", authtest.Password)
	if got := last(auth.EventSignIn); got != "Bad\uFFFDAgent" || !utf8.ValidString(got) {
		t.Errorf("invalid UTF-8 UserAgent kept as %q, want %q", got, "Bad\uFFFDAgent")
	}

	handle := handleOf(t, c3)
	if err := s.Auth.RevokeSession(t.Context(), handle); err != nil {
		t.Fatal(err)
	}
	if got := last(auth.EventSessionRevoked); got != "" {
		t.Errorf("RevokeSession (Go API) event UserAgent %q, want none", got)
	}
}
