package auth_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// banFixture is a user who signs in four ways (a password, a provider
// with the same address, emailed codes and a passkey), under account
// linking, with a live session of the password and of the provider in the
// mode under test.
type banFixture struct {
	s       *authtest.Server
	p       *authtest.Provider
	key     *authtest.Authenticator
	events  *eventLog
	email   string
	uid     string
	pw, tp  *authtest.Client
	outside *authtest.Client // another user's session
}

func newBanFixture(t *testing.T, m authtest.Mode) *banFixture {
	t.Helper()
	f := &banFixture{events: newEventLog(), email: "ada@example.com"}
	p := authtest.NewProvider(t)
	f.p = p
	cfg := auth.Config{AccountLinking: true, OnEvent: f.events.record, Passwordless: passwordless.Config{Flow: passwordless.Code}}
	cfg.ThirdParty.Providers = append(cfg.ThirdParty.Providers, p.Provider())
	f.s = pkServer(t, cfg)
	var pw *authtest.Client
	pw, _, f.uid, _ = linkedUser(t, f.s, p, f.email, "ada-google")
	f.key = f.s.NewAuthenticator()
	if res := pw.AddPasskey(f.key); res.Status != "OK" {
		t.Fatalf("adding a passkey: %d %s", res.StatusCode, res.Body)
	}
	if got := wantOK(t, "codes", f.s.NewClient(m).SignInWithCode(f.email)); got != f.uid {
		t.Fatalf("codes signed in %s, want %s", got, f.uid)
	}
	f.pw, f.tp = f.s.NewClient(m), f.s.NewClient(m)
	wantOK(t, "password", f.pw.SignIn(f.email, authtest.Password))
	wantOK(t, "provider", f.tp.SignInWithProvider(p))
	f.outside, _ = f.s.SignedIn(m)
	return f
}

// bannedBody is the refusal of a banned user's sign-in with status.
func bannedBody(status string) string {
	return `{"status":"` + status + `","reason":"This account is suspended. Please contact support."}`
}

// A banned user's sessions end at once (a refresh is refused with the
// reason banned), every way they sign in is refused once they have
// proved who they are, with the SDKs' NOT_ALLOWED status and a reason
// their forms show, and a wrong password still answers as for anyone.
// Lifting the ban gives back no session it ended; the user signs in again.
func TestBanUser(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		f := newBanFixture(t, m)
		ctx := t.Context()
		access, refresh := f.pw.Tokens()
		if err := f.s.Auth.BanUser(ctx, f.uid, auth.Ban{Reason: "chargebacks", By: "op-1"}); err != nil {
			t.Fatalf("BanUser: %v", err)
		}
		for _, c := range []*authtest.Client{f.pw, f.tp} {
			want401(t, "a banned user's refresh", c.Refresh(), "unauthorised", auth.ReasonBanned)
		}
		if res := f.outside.Refresh(); res.StatusCode != http.StatusOK {
			t.Errorf("another user's refresh: %d %s, want 200", res.StatusCode, res.Body)
		}

		wantNotAllowed(t, "the password", f.s.NewClient(m).SignIn(f.email, authtest.Password), bannedBody("SIGN_IN_NOT_ALLOWED"))
		wantNotAllowed(t, "the provider", f.s.NewClient(m).SignInWithProvider(f.p), bannedBody("SIGN_IN_UP_NOT_ALLOWED"))
		wantNotAllowed(t, "codes", f.s.NewClient(m).SignInWithCode(f.email), bannedBody("SIGN_IN_UP_NOT_ALLOWED"))
		wantNotAllowed(t, "the passkey", f.s.NewClient(m).SignInWithPasskey(f.key), bannedBody("SIGN_IN_NOT_ALLOWED"))
		wrong := f.s.NewClient(m).SignIn(f.email, "not the password 1")
		wantReply(t, "a wrong password", wrong.StatusCode, wrong.Body, http.StatusOK, `{"status":"WRONG_CREDENTIALS_ERROR"}`)

		u, err := f.s.Auth.UserByID(ctx, f.uid)
		if err != nil || u.Ban.Reason != "chargebacks" || u.Ban.By != "op-1" || !u.Ban.ActiveAt(f.s.Clock.Now()) {
			t.Errorf("UserByID of the banned user: %+v, %v", u.Ban, err)
		}
		if sessions, _ := f.s.Auth.Sessions(ctx, f.uid); len(sessions) != 0 {
			t.Errorf("sessions of the banned user: %d, want none", len(sessions))
		}
		banned := f.events.of(auth.EventUserBanned)
		if len(banned) != 1 || banned[0].UserID != f.uid || banned[0].Operator != "op-1" {
			t.Errorf("user_banned events: %+v", banned)
		}
		if refused := f.events.of(auth.EventSignInBanned); len(refused) != 4 {
			t.Errorf("sign_in_banned events: %d, want one per way in (4)", len(refused))
		}

		if err := f.s.Auth.UnbanUser(ctx, f.uid, "op-2"); err != nil {
			t.Fatalf("UnbanUser: %v", err)
		}
		old := presentAt(f.s, m, access, refresh)
		want401(t, "a refresh the ban ended, after it was lifted", old.Refresh(), "unauthorised", auth.ReasonBanned)
		again := f.s.NewClient(m)
		wantOK(t, "the password after the ban", again.SignIn(f.email, authtest.Password))
		mfWantOpen(t, "the session after the ban", again, f.uid)
		if un := f.events.of(auth.EventUserUnbanned); len(un) != 1 || un[0].Operator != "op-2" {
			t.Errorf("user_unbanned events: %+v", un)
		}
	})
}

// A ban with an end lets the user in again from that moment, with no
// one lifting it.
func TestBanRunsOut(t *testing.T) {
	mfModes(t, func(t *testing.T, m authtest.Mode) {
		s := authtest.NewServer(t, auth.Config{})
		_, u := s.SignedIn(m)
		if err := s.Auth.BanUser(t.Context(), u.ID, auth.Ban{Until: s.Clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		wantNotAllowed(t, "within the ban", s.NewClient(m).SignIn(u.Email, authtest.Password), bannedBody("SIGN_IN_NOT_ALLOWED"))
		s.Clock.Advance(time.Hour)
		wantOK(t, "when the ban has run out", s.NewClient(m).SignIn(u.Email, authtest.Password))
	})
}

// BanUser's errors: an unknown user, an end that is not after now, and a
// Store that keeps no bans.
func TestBanUserErrors(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{})
	_, u := s.SignedIn(authtest.Header)
	ctx := t.Context()
	if err := s.Auth.BanUser(ctx, "nobody", auth.Ban{}); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("BanUser of an unknown user: %v, want ErrNotFound", err)
	}
	if err := s.Auth.UnbanUser(ctx, "nobody", ""); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("UnbanUser of an unknown user: %v, want ErrNotFound", err)
	}
	if err := s.Auth.BanUser(ctx, u.ID, auth.Ban{Until: s.Clock.Now()}); err == nil {
		t.Error("BanUser with an end that is now: no error")
	}
	if u, _ := s.Auth.UserByID(ctx, u.ID); !u.Ban.At.IsZero() {
		t.Errorf("a refused ban was recorded: %+v", u.Ban)
	}
	plain := authtest.NewServer(t, auth.Config{Store: struct{ store.Store }{memstore.New()}})
	_, pu := plain.SignedIn(authtest.Header)
	if err := plain.Auth.BanUser(ctx, pu.ID, auth.Ban{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("BanUser with a Store that keeps no bans: %v, want errors.ErrUnsupported", err)
	}
}
