package auth_test

// Account linking against what a stranger may do outside the histories of
// TestAccountProperties: plant a session in the owner's browser, sign up
// while the owner's proof has no owner, poll for verification mail, and a
// store that fails while a reset claims the address.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// A verification link proves that someone reads the inbox, never that
// they hold the login, even when the browser that opens it carries the
// login's session: a stranger can plant one there (a shared device, a
// cookie set from a sibling subdomain). So the owner's later sign-in with
// a provider evicts the stranger as for any unproven login.
func TestLinkVerificationInPlantedSession(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s, p := linkingServer(t, true, auth.Config{Store: st})
	const victim = "planted@example.com"
	stranger, sid := signUpWith(t, s, authtest.Header, victim, "stranger pw 1")

	// The owner's browser holds the stranger's session and opens the
	// link the stranger had mailed.
	owner := s.NewClient(authtest.Header)
	owner.SetTokens(stranger.Tokens())
	tok := verificationToken(t, s, stranger, 1)
	res := owner.VerifyEmail(tok)
	wantReply(t, "verify", res.StatusCode, res.Body, http.StatusOK, okBody)
	l, err := st.Login(t.Context(), store.EmailPasswordKey(victim))
	if err != nil || !l.EmailVerified || l.EmailProven || l.OwnsEmail {
		t.Fatalf("the stranger's login after the link was opened in their session: %+v, %v; want verified, not proven, owning nothing", l, err)
	}

	p.SetIdentity("planted-google", victim, true)
	c := s.NewClient(authtest.Header)
	if got := wantOK(t, "the owner's provider sign-in", c.SignInWithProvider(p)); got != sid {
		t.Errorf("the owner's sign-in reached %s, want the stranger's user %s taken over", got, sid)
	}
	if res := stranger.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the stranger's refresh after the owner's sign-in: %d %s, want 401", res.StatusCode, res.Body)
	}
	wantSignIn(t, s, victim, "stranger pw 1", false)
}

// A password sign-up is refused where another user proves the address,
// even with nobody owning it (its owning login was unlinked): the new
// login would be refused at every sign-in, and must not get a session now.
func TestLinkPasswordSignUpWhileProvenUnowned(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	s, p := linkingServer(t, true, auth.Config{Store: st})
	const email = "unowned@example.com"
	_, tp, uid, _ := linkedUser(t, s, p, email, "unowned-google")
	if err := s.Auth.Unlink(t.Context(), uid, uid); err != nil {
		t.Fatalf("unlinking the owning password login: %v", err)
	}
	for _, l := range loginsWithEmail(t, st, email) {
		if l.OwnsEmail || !l.EmailProven {
			t.Fatalf("after the unlink: %+v, want the provider login proven and owning nothing", l)
		}
	}
	res := s.NewClient(authtest.Header).SignUp(email, authtest.Password)
	wantNotAllowed(t, "password sign-up", res, lkPasswordSignUpRefused)
	wantSession(t, tp, uid)
}

// The per-address allowance of verification mail applies to logins at
// providers, which many users may share an address through; a stranger
// polling with one cannot use up the allowance of the address's password
// login.
func TestVerificationMailNotStarvedByStranger(t *testing.T) {
	t.Parallel()
	s, p := linkingServer(t, false, auth.Config{})
	const email = "starve@example.com"
	p.SetIdentity("stranger", email, false)
	stranger := s.NewClient(authtest.Header)
	wantOK(t, "the stranger's provider sign-in", stranger.SignInWithProvider(p))
	if res := stranger.SendVerificationEmail(); res.Status != "OK" {
		t.Fatalf("the stranger's request: %d %s", res.StatusCode, res.Body)
	}
	owner, _ := signUpWith(t, s, authtest.Header, email, authtest.Password)
	if res := owner.SendVerificationEmail(); res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Errorf("the owner's request after the stranger's: %d %s, want OK", res.StatusCode, res.Body)
	}
}

// failingEmails is a store whose LoginsByEmail fails while armed.
type failingEmails struct {
	store.Store
	armed atomic.Bool
}

func (f *failingEmails) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	if f.armed.Load() {
		return nil, errors.New("store unavailable")
	}
	return f.Store.LoginsByEmail(ctx, email)
}

// A reset proves the address even when the store fails as it claims it;
// the owner's next password sign-in makes the claim, and the stranger's
// unproven login with the address stops working then.
func TestLinkResetClaimAfterFault(t *testing.T) {
	t.Parallel()
	mem := memstore.New()
	st := &failingEmails{Store: mem}
	s, p := linkingServer(t, true, auth.Config{Store: st})
	const email = "claim@example.com"
	signUpWith(t, s, authtest.Header, email, authtest.Password)
	p.SetIdentity("stranger", email, false)
	stranger := s.NewClient(authtest.Header)
	wantOK(t, "the stranger's unverified provider sign-in", stranger.SignInWithProvider(p))

	tok := requestToken(t, s, email, 1)
	st.armed.Store(true)
	reset := s.NewClient(authtest.Header).ResetPassword(tok, newPassword)
	st.armed.Store(false)
	wantReply(t, "reset", reset.StatusCode, reset.Body, http.StatusOK, okBody)
	if l, err := mem.Login(t.Context(), store.EmailPasswordKey(email)); err != nil || !l.EmailProven || l.OwnsEmail {
		t.Fatalf("after the reset whose claim failed: %+v, %v; want proven, owning nothing", l, err)
	}

	wantSignIn(t, s, email, newPassword, true)
	if l, err := mem.Login(t.Context(), store.EmailPasswordKey(email)); err != nil || !l.OwnsEmail {
		t.Errorf("after the owner's sign-in: %+v, %v; want the password login owning the address", l, err)
	}
	if res := stranger.Refresh(); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the stranger's session after the owner's claim: %d %s, want 401", res.StatusCode, res.Body)
	}
}

// After a join that evicts the maker of an unproven password login, the
// maker's access tokens open nothing on the instance that joined, with or
// without Config.CheckSessionInStore: the user is the owner's now.
func TestLinkEvictedAccessTokens(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("CheckSessionInStore %v", check), func(t *testing.T) {
			t.Parallel()
			s, p := linkingServer(t, true, auth.Config{CheckSessionInStore: check})
			const email = "evicted@example.com"
			stranger, sid := signUpWith(t, s, authtest.Header, email, "stranger pw 1")
			wantSession(t, stranger, sid)
			p.SetIdentity("evicted-google", email, true)
			owner := s.NewClient(authtest.Header)
			if got := wantOK(t, "the owner's provider sign-in", owner.SignInWithProvider(p)); got != sid {
				t.Fatalf("the owner's sign-in reached %s, want %s", got, sid)
			}
			s.Clock.Advance(time.Minute)
			wantRefusal(t, stranger.Get("/api/session"), "unauthorised", auth.ReasonRevoked)
			wantSession(t, owner, sid)
		})
	}
}
