package auth_test

// Pre-account-takeover: a stranger signs up with someone else's address
// and a password, and adds ways in of their own while signed in (a
// passkey, a provider of another address, an authenticator app). When
// the address's owner takes the account back (a reset from the link
// mailed to it, or under linking a provider that vouches for the
// address), none of what the stranger added opens it, or stands in the
// owner's way.

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/thirdparty"
)

// phSquat is a stranger's account on the owner's address, with a
// passkey, a provider identity of the stranger's and an authenticator app
// added while signed in.
type phSquat struct {
	s        *authtest.Server
	p        *authtest.Provider
	user     auth.User
	key      *authtest.Authenticator
	stranger *authtest.Client
}

func phSquatted(t *testing.T, linking bool) phSquat {
	t.Helper()
	p := authtest.NewProvider(t)
	s := pkServer(t, auth.Config{
		AccountLinking: linking,
		ThirdParty:     thirdparty.Config{Providers: []provider.Provider{p.Provider()}},
		MFA:            auth.MFAConfig{Factors: []string{auth.FactorTOTP}},
	})
	c, u := s.SignedIn(authtest.Header)
	key := s.NewAuthenticator()
	if res := c.AddPasskey(key); res.Status != "OK" {
		t.Fatalf("the stranger adds a passkey: %d %s", res.StatusCode, res.Body)
	}
	p.SetIdentity("stranger-own", "stranger@example.com", true)
	lsWantLinked(t, "the stranger adds their provider", c.LinkWithProvider(p), u.ID, true)
	c.SetUpTOTP()
	return phSquat{s: s, p: p, user: u, key: key, stranger: c}
}

// wantNothingOfTheStranger checks that none of the stranger's ways opens
// the owner's user, and that the owner's user has no second factor.
func (q phSquat) wantNothingOfTheStranger(t *testing.T, ownerID string) {
	t.Helper()
	if res := q.s.NewClient(authtest.Header).SignInWithPasskey(q.key); res.Status == "OK" && userObject(t, res)["id"] == ownerID {
		t.Fatalf("the stranger's passkey opens the owner's user: %s", res.Body)
	}
	q.p.SetIdentity("stranger-own", "stranger@example.com", true)
	if res := q.s.NewClient(authtest.Header).SignInWithProvider(q.p); res.Status == "OK" && userObject(t, res)["id"] == ownerID {
		t.Fatalf("the stranger's provider opens the owner's user: %s", res.Body)
	}
	if q.stranger.Refresh().StatusCode != http.StatusUnauthorized {
		t.Fatal("the stranger's session goes on")
	}
	u, err := q.s.Auth.UserByID(t.Context(), ownerID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range u.LoginMethods {
		if m.Method != "emailpassword" && m.Email != q.user.Email {
			t.Errorf("the owner's user keeps the stranger's %s login", m.Method)
		}
	}
}

// TestPrehijackReset: the owner's reset of the squatted password.
func TestPrehijackReset(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		t.Run(fmt.Sprintf("linking=%v", linking), func(t *testing.T) {
			t.Parallel()
			q := phSquatted(t, linking)
			owner := q.s.NewClient(authtest.Header)
			before := len(q.s.Mailbox.Messages())
			owner.RequestPasswordReset(q.user.Email)
			_, tok := authtest.ResetLink(t, q.s.Mailbox.LastTo(t, q.user.Email, before, 5*time.Second))
			if res := owner.ResetPassword(tok, "owners own pw 7"); res.Status != "OK" {
				t.Fatalf("reset: %d %s", res.StatusCode, res.Body)
			}
			// No authenticator app of the stranger's is asked for.
			id := wantOK(t, "the owner signs in", owner.SignIn(q.user.Email, "owners own pw 7"))
			wantSession(t, owner, id)
			q.wantNothingOfTheStranger(t, id)
		})
	}
}

// TestPrehijackProvider: under linking, the owner's provider that
// vouches for the address takes the squatted account.
func TestPrehijackProvider(t *testing.T) {
	t.Parallel()
	q := phSquatted(t, true)
	q.p.SetIdentity("owner-at-provider", q.user.Email, true)
	owner := q.s.NewClient(authtest.Header)
	id := wantOK(t, "the owner's provider", owner.SignInWithProvider(q.p))
	if id != q.user.ID {
		t.Fatalf("the owner's provider made user %s, want it to take %s", id, q.user.ID)
	}
	wantSession(t, owner, id)
	q.wantNothingOfTheStranger(t, id)
}
