package auth_test

// The fault sweep (fault_test.go) over third-party sign-in, account
// linking, email verification and the Go API's Unlink and DeleteUser: the
// flows, the invariants of users and their logins ((j) to (o) there), and
// TestFaultBreakage, which shows that each flow's checks catch what they
// are for.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/internal/faultstore"
	"github.com/latchkit/auth/store"
)

// faultIdentity is a provider identity a flow signed in with. It must
// sign in again once the run is over, with the email it reports last, and
// reach the user its login belongs to: user, if set.
type faultIdentity struct {
	subject, email string
	verified       bool
	user           string
}

func faultIdentityKey(subject string) store.LoginKey {
	return store.LoginKey{Method: store.MethodThirdParty, ThirdParty: authtest.ProviderID, Subject: subject}
}

// authorise does what the frontend and the browser do before /signinup:
// it asks for the authorisation URL, lets the provider sign the identity
// in, and returns the /signinup body with the code the provider sent back.
func (e *faultEnv) authorise(c *authtest.Client, subject, email string, verified bool) []byte {
	e.t.Helper()
	e.provider.SetIdentity(subject, email, verified)
	redirect := strings.TrimRight(e.srv.AuthConfig.AppURL, "/") + "/auth/callback/" + authtest.ProviderID
	q := url.Values{"thirdPartyId": {authtest.ProviderID}, "redirectURIOnProviderDashboard": {redirect}}
	a := e.send(c, http.MethodGet, "/auth/authorisationurl?"+q.Encode(), nil, "thirdparty", "")
	if !a.ok() {
		e.fatal("authorisation URL: %v", a)
	}
	authURL, _ := a.res.JSON["urlWithQueryParams"].(string)
	verifier, _ := a.res.JSON["pkceCodeVerifier"].(string)
	params := map[string]string{}
	back := e.provider.Authorize(e.t, authURL)
	for k := range back {
		params[k] = back.Get(k)
	}
	b, _ := json.Marshal(map[string]any{
		"thirdPartyId": authtest.ProviderID,
		"redirectURIInfo": map[string]any{
			"redirectURIOnProviderDashboard": redirect,
			"redirectURIQueryParams":         params,
			"pkceCodeVerifier":               verifier,
		},
	})
	return b
}

func (e *faultEnv) postSignInUp(c *authtest.Client, body []byte) faultAnswer {
	e.t.Helper()
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/signinup", body, "thirdparty", access)
}

// providerSignIn signs in, or up, with a provider identity from the start.
func (e *faultEnv) providerSignIn(c *authtest.Client, subject, email string, verified bool) faultAnswer {
	e.t.Helper()
	return e.postSignInUp(c, e.authorise(c, subject, email, verified))
}

func (e *faultEnv) sendVerification(c *authtest.Client) faultAnswer {
	e.t.Helper()
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/user/email/verify/token", []byte("{}"), "emailverification", access)
}

// verify opens a verification link, with c's session if it has one.
func (e *faultEnv) verify(c *authtest.Client, tok string) faultAnswer {
	e.t.Helper()
	b, _ := json.Marshal(map[string]any{"method": "token", "token": tok})
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/user/email/verify", b, "emailverification", access)
}

// mustVerificationToken asks for a verification link for c's login,
// outside any fault, and returns the mailed token.
func (e *faultEnv) mustVerificationToken(c *authtest.Client) string {
	e.t.Helper()
	before := len(e.srv.Mailbox.Messages())
	if a := e.sendVerification(c); !a.ok() {
		e.fatal("verification request without faults: %v", a)
	}
	if ev, ok := e.mailOutcome(); !ok || ev.Kind != auth.EventEmailVerificationSent {
		e.fatal("verification request without faults: outcome %q", ev.Kind)
	}
	msgs := e.srv.Mailbox.WaitFor(e.t, before+1, faultRequestTimeout)
	_, tok := authtest.VerificationLink(e.t, msgs[len(msgs)-1])
	e.secrets[tok] = true
	return tok
}

// call runs a call of the Go API as an application does: what it returns,
// or the panic that comes out of it.
func (e *faultEnv) call(f func(ctx context.Context) error) (a faultAnswer) {
	a.api = true
	defer func() {
		if p := recover(); p != nil {
			a.panicked = p
		}
	}()
	a.err = f(e.t.Context())
	return a
}

// faultUserOf is the id of the user an OK sign-in answer names.
func faultUserOf(a faultAnswer) string {
	if a.api || a.err != nil {
		return ""
	}
	u, _ := a.res.JSON["user"].(map[string]any)
	id, _ := u["id"].(string)
	return id
}

// mustUser is the user whose password login the flow's email has.
func (e *faultEnv) mustUser() string {
	e.t.Helper()
	l, err := e.mem.Login(e.t.Context(), store.EmailPasswordKey(e.email))
	if err != nil {
		e.t.Fatalf("setup: the password login of %s: %v", e.email, err)
	}
	return l.UserID
}

// mustProve proves the email of the user's first login through the Go
// API, as an application does that checked it some other way.
func (e *faultEnv) mustProve(userID string) {
	e.t.Helper()
	if err := e.srv.Auth.SetEmailVerified(e.t.Context(), userID, true); err != nil {
		e.t.Fatalf("setup: SetEmailVerified: %v", err)
	}
}

// mustJoin signs c in with a new provider identity that reports the
// flow's email verified, which joins the user who owns it.
func (e *faultEnv) mustJoin(c *authtest.Client) {
	e.t.Helper()
	e.subject = "fault-" + uuid.NewString()
	a := e.providerSignIn(c, e.subject, e.email, true)
	if faultUserOf(a) != e.userID {
		e.t.Fatalf("setup: provider sign-in of %s: %v, want it to join user %s", e.email, a, e.userID)
	}
}

// wantEnded checks that the sessions a flow had to end no longer
// refresh, and that their access tokens open no route where that is
// promised at once: with the session read from the store
// (Config.CheckSessionInStore), or, for a deleted user, on the instance
// that deleted them.
func (e *faultEnv) wantEnded(what string, accessToo bool) {
	e.t.Helper()
	for i, c := range e.ending {
		access, _ := c.Tokens()
		if access == "" {
			continue // told to forget its session already
		}
		probe := e.srv.NewClient(authtest.Header)
		probe.AccessToken = access
		if accessToo || e.cfg.CheckSessionInStore {
			if r := e.send(probe, http.MethodGet, "/api/session", nil, "anti-csrf", access); r.err != nil || r.res.StatusCode != http.StatusUnauthorized {
				e.violation("%s: the access token of session %d from before opens a route: %v", what, i+1, r)
			}
		}
		if r := e.refresh(c); r.ok() || r.err != nil || r.res.StatusCode != http.StatusUnauthorized {
			e.violation("%s: session %d from before refreshes: %v", what, i+1, r)
		}
	}
}

// wantLasting checks that the sessions a flow had to leave alone still
// refresh.
func (e *faultEnv) wantLasting(what string) {
	e.t.Helper()
	for i, c := range e.lasting {
		if r := e.refresh(c); !r.ok() {
			e.violation("%s: session %d, which it must leave alone, does not refresh: %v", what, i+1, r)
		}
	}
}

// strangerUnder reports whether l, under account linking, is an unproven
// login of an address that another user owns or has proven: it signs in
// no more.
func (e *faultEnv) strangerUnder(l store.Login) bool {
	e.t.Helper()
	if !e.cfg.AccountLinking || l.EmailProven {
		return false
	}
	return slices.ContainsFunc(loginsWithEmail(e.t, e.mem, l.Email), func(o store.Login) bool {
		return o.UserID != l.UserID && (o.OwnsEmail || o.EmailProven)
	})
}

// faultLinkingFlows are the flows of third-party sign-in, account
// linking, email verification, Unlink and DeleteUser.
func faultLinkingFlows() []faultFlow {
	config := func(linking, sessionCheck bool) func(*auth.Config) {
		return func(cfg *auth.Config) {
			cfg.AccountLinking = linking
			cfg.EmailVerification.Mode = emailverification.Optional
			cfg.CheckSessionInStore = sessionCheck
		}
	}
	header := []authtest.Mode{authtest.Header}

	// retrySignIn is the client's answer to a failed provider sign-in:
	// it starts over. It returns the answer that counts.
	retrySignIn := func(e *faultEnv, c *authtest.Client, a faultAnswer, email string, verified bool) faultAnswer {
		if a.ok() {
			return a
		}
		r := e.providerSignIn(c, e.subject, email, verified)
		if !r.ok() {
			e.violation("provider sign-in retry after %v: %v, want OK", a, r)
		}
		return r
	}

	tpSignUp := faultFlow{
		name:       "thirdparty-signup",
		modes:      header,
		thirdParty: true,
		configure:  config(false, false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.subject, e.email = "fault-"+uuid.NewString(), e.srv.NewEmail()
			e.signInUp = e.authorise(c, e.subject, e.email, true)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.postSignInUp(c, e.signInUp) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			e.identities = append(e.identities, faultIdentity{subject: e.subject, email: e.email, verified: true})
			made, err := e.mem.Login(e.t.Context(), faultIdentityKey(e.subject))
			if a.ok() && (err != nil || made.UserID != faultUserOf(a)) {
				e.violation("provider sign-up answered OK for user %s, but the store has %+v, %v", faultUserOf(a), made, err)
			}
			r := retrySignIn(e, c, a, e.email, true)
			switch {
			case !r.ok():
			case err == nil && faultUserOf(r) != made.UserID:
				e.violation("provider sign-up retry after the user was made: user %s, want %s: one identity, two users", faultUserOf(r), made.UserID)
			case err == nil && !a.ok():
				e.finding("provider sign-up failed after the user was made: the retry signs in to it")
			}
			got, err := e.mem.Login(e.t.Context(), faultIdentityKey(e.subject))
			if err != nil || got.Email != e.email || !got.EmailVerified {
				e.violation("the provider's login after sign-up: %+v, %v; want %s, verified", got, err, e.email)
			}
		},
	}

	tpSignIn := faultFlow{
		name:       "thirdparty-signin",
		modes:      header,
		thirdParty: true,
		configure:  config(false, false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.subject, e.email = "fault-"+uuid.NewString(), e.srv.NewEmail()
			a := e.providerSignIn(e.srv.NewClient(authtest.Header), e.subject, e.email, true)
			if e.userID = faultUserOf(a); e.userID == "" {
				e.t.Fatalf("setup: provider sign-up: %v", a)
			}
			e.signInUp = e.authorise(c, e.subject, e.email, true)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.postSignInUp(c, e.signInUp) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			e.identities = append(e.identities, faultIdentity{subject: e.subject, email: e.email, verified: true, user: e.userID})
			if r := retrySignIn(e, c, a, e.email, true); r.ok() && faultUserOf(r) != e.userID {
				e.violation("a returning provider identity reached user %s, want %s", faultUserOf(r), e.userID)
			}
		},
	}

	// The provider now reports another address, which a password user
	// has: with linking off the two stay apart, and the login takes it.
	tpEmailChange := faultFlow{
		name:       "thirdparty-email-change",
		modes:      header,
		thirdParty: true,
		configure:  config(false, false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.subject = "fault-" + uuid.NewString()
			a := e.providerSignIn(e.srv.NewClient(authtest.Header), e.subject, e.srv.NewEmail(), true)
			if e.userID = faultUserOf(a); e.userID == "" {
				e.t.Fatalf("setup: provider sign-up: %v", a)
			}
			e.mustSignUp(e.srv.NewClient(authtest.Header))
			e.signInUp = e.authorise(c, e.subject, e.email, true)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.postSignInUp(c, e.signInUp) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			e.identities = append(e.identities, faultIdentity{subject: e.subject, email: e.email, verified: true, user: e.userID})
			if r := retrySignIn(e, c, a, e.email, true); r.ok() && faultUserOf(r) != e.userID {
				e.violation("the provider identity with a new email reached user %s, want %s", faultUserOf(r), e.userID)
			}
			got, err := e.mem.Login(e.t.Context(), faultIdentityKey(e.subject))
			if err != nil || got.Email != e.email || !got.EmailVerified || got.UserID != e.userID {
				e.violation("the provider's login after its email changed: %+v, %v; want %s, verified, of user %s", got, err, e.email, e.userID)
			}
			if pw := e.mustUser(); pw == e.userID {
				e.violation("with linking off, the password user of %s and the provider's user became one", e.email)
			}
		},
	}

	// A verified provider sign-in joins the user whose proven password
	// login owns the address: nothing of that user ends.
	linkJoin := faultFlow{
		name:       "link-join",
		modes:      header,
		thirdParty: true,
		configure:  config(true, false),
		setup: func(e *faultEnv, c *authtest.Client) {
			pw := e.srv.NewClient(authtest.Header)
			e.mustSignUp(pw)
			e.userID = e.mustUser()
			e.mustProve(e.userID)
			e.lasting = []*authtest.Client{pw}
			e.subject = "fault-" + uuid.NewString()
			e.signInUp = e.authorise(c, e.subject, e.email, true)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.postSignInUp(c, e.signInUp) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			e.identities = append(e.identities, faultIdentity{subject: e.subject, email: e.email, verified: true, user: e.userID})
			if a.ok() {
				if got, err := e.mem.Login(e.t.Context(), faultIdentityKey(e.subject)); err != nil || got.UserID != e.userID {
					e.violation("the join answered OK, but the store has the login as %+v, %v; want it with user %s", got, err, e.userID)
				}
			}
			if r := retrySignIn(e, c, a, e.email, true); r.ok() && faultUserOf(r) != e.userID {
				e.violation("a verified provider sign-in reached user %s, want the owner of %s, %s", faultUserOf(r), e.email, e.userID)
			}
			e.wantLasting("a join with a proven login")
		},
	}

	// A verified provider sign-in meets a password login of the address
	// that nobody proved: its password is voided and its sessions end,
	// and then the provider's login joins its user as the owner.
	linkEvict := faultFlow{
		name:       "link-evict",
		modes:      header,
		thirdParty: true,
		configure:  config(true, true),
		setup: func(e *faultEnv, c *authtest.Client) {
			first, second := e.srv.NewClient(authtest.Header), e.srv.NewClient(authtest.Cookie)
			e.mustSignUp(first)
			if a := e.signIn(second, e.email, authtest.Password); !a.ok() {
				e.t.Fatalf("setup: sign-in: %v", a)
			}
			e.userID = e.mustUser()
			e.ending = []*authtest.Client{first, second}
			e.subject = "fault-" + uuid.NewString()
			e.signInUp = e.authorise(c, e.subject, e.email, true)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.postSignInUp(c, e.signInUp) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			e.identities = append(e.identities, faultIdentity{subject: e.subject, email: e.email, verified: true, user: e.userID})
			if r := retrySignIn(e, c, a, e.email, true); r.ok() && faultUserOf(r) != e.userID {
				e.violation("a verified provider sign-in reached user %s, want the user of the unproven password login, %s", faultUserOf(r), e.userID)
			}
			// (o)
			if r := e.signIn(e.srv.NewClient(authtest.Header), e.email, authtest.Password); r.ok() || r.err != nil {
				e.violation("after a join with eviction, the old password: %v, want no sign-in", r)
			}
			e.wantEnded("a join with eviction", false)
		},
	}

	// An unverified provider sign-in of an address another user owns is
	// refused, and leaves nothing behind.
	linkRefused := faultFlow{
		name:       "link-refused",
		modes:      header,
		thirdParty: true,
		status:     "SIGN_IN_UP_NOT_ALLOWED",
		configure:  config(true, false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.mustSignUp(e.srv.NewClient(authtest.Header))
			e.userID = e.mustUser()
			e.mustProve(e.userID)
			e.subject = "fault-" + uuid.NewString()
			e.signInUp = e.authorise(c, e.subject, e.email, false)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.postSignInUp(c, e.signInUp) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if !a.is(http.StatusOK, "SIGN_IN_UP_NOT_ALLOWED") {
				if r := e.providerSignIn(c, e.subject, e.email, false); !r.is(http.StatusOK, "SIGN_IN_UP_NOT_ALLOWED") {
					e.violation("unverified provider sign-in retry, the email owned by another user: %v, want SIGN_IN_UP_NOT_ALLOWED", r)
				}
			}
			if got, err := e.mem.Login(e.t.Context(), faultIdentityKey(e.subject)); !errors.Is(err, store.ErrNotFound) {
				e.violation("a refused provider sign-in left its login: %+v, %v", got, err)
			}
			for _, l := range loginsWithEmail(e.t, e.mem, e.email) {
				if l.UserID != e.userID {
					e.violation("a refused provider sign-in left a login of %s with user %s", e.email, l.UserID)
				}
			}
			if owner, err := e.mem.Login(e.t.Context(), store.EmailPasswordKey(e.email)); err != nil || !owner.OwnsEmail {
				e.violation("the owner of %s after a refused sign-in: %+v, %v; want it to own the email still", e.email, owner, err)
			}
		},
	}

	verifySend := faultFlow{
		name:           "verify-send",
		modes:          header,
		configure:      config(true, false),
		offPathMethods: map[string]bool{"CreateCode": true},
		setup:          func(e *faultEnv, c *authtest.Client) { e.mustSignUp(c) },
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			a := e.sendVerification(c)
			if a.ok() {
				e.mailOutcome() // the flow includes the outbox's work
			}
			return a
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			fired, _ := e.fs.Fired()
			lost := !a.ok() || fired.Method == "CreateCode" && e.plan.Kind != faultstore.Delay
			msgs := e.srv.Mailbox.Messages()
			switch {
			case lost && len(msgs) != 0:
				e.violation("a verification email went out although %s failed (%v)", fired.Method, a)
			case !lost && len(msgs) != 1:
				e.violation("%d verification emails, want 1", len(msgs))
			}
			var tok string
			if len(msgs) == 0 {
				if fired.Method == "CreateCode" && fired.Committed() {
					e.finding("verification token committed but its email not sent: an orphan token nobody knows")
				}
				// No email: the user asks again, once the allowance of
				// one a minute lets them.
				e.srv.Clock.Advance(time.Minute + time.Second)
				tok = e.mustVerificationToken(c)
			} else {
				_, tok = authtest.VerificationLink(e.t, msgs[len(msgs)-1])
				e.secrets[tok] = true
			}
			if r := e.verify(c, tok); !r.ok() {
				e.violation("verification with the mailed token: %v, want OK", r)
			}
			if r := e.verify(c, tok); !r.is(http.StatusOK, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR") {
				e.violation("second verification with one token: %v, want EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", r)
			}
			if l, err := e.mem.Login(e.t.Context(), store.EmailPasswordKey(e.email)); err != nil || !l.EmailVerified {
				e.violation("after the mailed link was opened: %+v, %v; want the email verified", l, err)
			}
		},
	}

	// verifyOpen opens a verification link in the login's own session, or
	// in another browser: both verify the email; only the first proves
	// the inbox is the login's.
	verifyOpen := func(name string, inSession bool) faultFlow {
		opener := func(e *faultEnv, c *authtest.Client) *authtest.Client {
			if inSession {
				return c
			}
			return e.srv.NewClient(authtest.Header)
		}
		// Proven in its own session, the login is made the owner of its
		// email if nobody is; failing that, the verification stands.
		var tolerated map[string]bool
		if inSession {
			tolerated = map[string]bool{"LoginsByEmail": true, "ClaimEmail": true}
		}
		return faultFlow{
			name:      name,
			modes:     header,
			configure: config(true, false),
			tolerated: tolerated,
			setup: func(e *faultEnv, c *authtest.Client) {
				e.mustSignUp(c)
				e.verifyTok = e.mustVerificationToken(c)
			},
			run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.verify(opener(e, c), e.verifyTok) },
			after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
				used := e.committed("VerifyEmail")
				if a.ok() && !used {
					e.violation("verification answered OK without using the token up")
				}
				if !a.ok() {
					r := e.verify(opener(e, c), e.verifyTok)
					switch {
					case used && !r.is(http.StatusOK, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR"):
						// (n)
						e.violation("a verification token used again after it committed: %v, want EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", r)
					case !used && !r.ok():
						e.violation("verification retry after a failure before it committed: %v, want OK", r)
					case used:
						e.finding("verification failed after it committed: the email is verified, the retry says the link is used")
					}
				}
				// (n)
				if r := e.verify(opener(e, c), e.verifyTok); !r.is(http.StatusOK, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR") {
					e.violation("a verification token used once more: %v, want EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", r)
				}
				l, err := e.mem.Login(e.t.Context(), store.EmailPasswordKey(e.email))
				if err != nil || !l.EmailVerified {
					e.violation("after the link was opened: %+v, %v; want the email verified", l, err)
				}
				// A link proves that someone reads the inbox, not that
				// they hold the login, whatever session comes with it.
				if l.EmailProven {
					e.violation("a verification link proved its login's email (opened in its session: %v)", inSession)
				}
			},
		}
	}

	// Unlink of a user's password login, which owns the address, while
	// both logins have sessions.
	unlink := faultFlow{
		name:       "unlink",
		modes:      header,
		thirdParty: true,
		api:        true,
		configure:  config(true, false),
		setup: func(e *faultEnv, c *authtest.Client) {
			pw := e.srv.NewClient(authtest.Header)
			e.mustSignUp(pw)
			e.userID = e.mustUser()
			e.loginID = e.userID // the first login has the user's id
			e.mustProve(e.userID)
			e.mustJoin(c)
			e.ending, e.lasting = []*authtest.Client{pw}, []*authtest.Client{c}
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.call(func(ctx context.Context) error { return e.srv.Auth.Unlink(ctx, e.userID, e.loginID) })
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			e.identities = append(e.identities, faultIdentity{subject: e.subject, email: e.email, verified: true, user: e.userID})
			removed := e.committed("DeleteLogin")
			if a.ok() && !removed {
				e.violation("Unlink returned nil without removing the login")
			}
			if !a.ok() {
				r := e.call(func(ctx context.Context) error { return e.srv.Auth.Unlink(ctx, e.userID, e.loginID) })
				switch {
				case removed && !errors.Is(r.err, auth.ErrNotFound):
					e.violation("Unlink again after it committed: %v, want ErrNotFound", r)
				case !removed && !r.ok():
					e.violation("Unlink retry after a failure before it committed: %v, want nil", r)
				case removed:
					e.finding("Unlink failed after it committed: the retry says the login is not found")
				}
			}
			// (m)
			if r := e.signIn(e.srv.NewClient(authtest.Header), e.email, authtest.Password); r.ok() || r.err != nil {
				e.violation("the unlinked password login: %v, want no sign-in", r)
			}
			e.wantEnded("Unlink", false)
			e.wantLasting("Unlink of another login")
		},
	}

	// DeleteUser of a user with two live sessions, a reset link and a
	// verification link outstanding.
	deleteUser := func(name string, sessionCheck bool) faultFlow {
		return faultFlow{
			name:      name,
			modes:     header,
			api:       true,
			configure: config(false, sessionCheck),
			setup: func(e *faultEnv, c *authtest.Client) {
				second := e.srv.NewClient(authtest.Cookie)
				e.mustSignUp(c)
				if a := e.signIn(second, e.email, authtest.Password); !a.ok() {
					e.t.Fatalf("setup: sign-in: %v", a)
				}
				e.userID = e.mustUser()
				e.ending = []*authtest.Client{c, second}
				e.resetTok = e.mustResetToken(e.srv.NewClient(authtest.Header))
				e.verifyTok = e.mustVerificationToken(c)
			},
			run: func(e *faultEnv, c *authtest.Client) faultAnswer {
				return e.call(func(ctx context.Context) error { return e.srv.Auth.DeleteUser(ctx, e.userID) })
			},
			after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
				removed := e.committed("DeleteUser")
				if a.ok() && !removed {
					e.violation("DeleteUser returned nil without deleting the user")
				}
				if !a.ok() {
					r := e.call(func(ctx context.Context) error { return e.srv.Auth.DeleteUser(ctx, e.userID) })
					switch {
					case removed && !errors.Is(r.err, auth.ErrNotFound):
						e.violation("DeleteUser again after it committed: %v, want ErrNotFound", r)
					case !removed && !r.ok():
						e.violation("DeleteUser retry after a failure before it committed: %v, want nil", r)
					case removed:
						e.finding("DeleteUser failed after it committed: the retry says the user is not found")
					}
				}
				// (l)
				if u, err := e.srv.Auth.UserByID(e.t.Context(), e.userID); !errors.Is(err, auth.ErrNotFound) {
					e.violation("the deleted user: %+v, %v; want ErrNotFound", u, err)
				}
				e.wantEnded("DeleteUser", true)
				if r := e.signIn(e.srv.NewClient(authtest.Header), e.email, authtest.Password); !r.is(http.StatusOK, "WRONG_CREDENTIALS_ERROR") {
					e.violation("the deleted user's password: %v, want WRONG_CREDENTIALS_ERROR", r)
				}
				if r := e.submitReset(e.srv.NewClient(authtest.Header), e.resetTok, faultNewPassword); !r.is(http.StatusOK, "RESET_PASSWORD_INVALID_TOKEN_ERROR") {
					e.violation("the deleted user's reset link: %v, want RESET_PASSWORD_INVALID_TOKEN_ERROR", r)
				}
				if r := e.verify(e.srv.NewClient(authtest.Header), e.verifyTok); !r.is(http.StatusOK, "EMAIL_VERIFICATION_INVALID_TOKEN_ERROR") {
					e.violation("the deleted user's verification link: %v, want EMAIL_VERIFICATION_INVALID_TOKEN_ERROR", r)
				}
			},
		}
	}

	return []faultFlow{
		tpSignUp,
		tpSignIn,
		tpEmailChange,
		linkJoin,
		linkEvict,
		linkRefused,
		verifySend,
		verifyOpen("verify-session", true),
		verifyOpen("verify-nosession", false),
		unlink,
		deleteUser("delete-user", true),
		deleteUser("delete-user-nocheck", false),
	}
}

// checkAccounts checks, with faults off, the invariants of users and
// their logins, (j) to (n), and that nobody is locked out of them.
func (e *faultEnv) checkAccounts(l *faultLedger) {
	e.t.Helper()
	ctx := e.t.Context()
	now := e.srv.Clock.Now()

	// (j)
	emails := make([]string, 0, len(l.emails))
	for email := range l.emails {
		emails = append(emails, email)
	}
	slices.Sort(emails)
	var owners []store.Login
	for _, email := range emails {
		logins, err := e.mem.LoginsByEmail(ctx, email)
		if err != nil {
			e.violation("logins of %s: %v", email, err)
		}
		var own []store.Login
		for _, lg := range logins {
			if lg.EmailProven && !lg.EmailVerified {
				e.violation("login %s has %s proven and not verified", lg.ID, email)
			}
			if !lg.OwnsEmail {
				continue
			}
			own = append(own, lg)
			switch {
			case !e.cfg.AccountLinking && !(lg.Method == store.MethodWebAuthn && lg.EmailProven):
				// Without linking only a passkey that a recovery proved
				// owns its address: a store adds a login with an address
				// to an existing user only as its owner or beside it.
				e.violation("login %s owns %s with account linking off", lg.ID, email)
			case !lg.EmailVerified || !lg.EmailProven:
				e.violation("login %s owns %s, which is not verified and proven (verified %v, proven %v)", lg.ID, email, lg.EmailVerified, lg.EmailProven)
			}
		}
		if len(own) > 1 {
			e.violation("%d logins own %s: %+v", len(own), email, own)
		}
		owners = append(owners, own...)
	}

	// (k), (l)
	seen := map[string]bool{}
	for _, id := range l.userIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		if l.deleted[id] {
			u, err := e.mem.UserByID(ctx, id)
			logins, _ := e.mem.Logins(ctx, id)
			sessions, _ := e.mem.UserSessions(ctx, id, now)
			if !errors.Is(err, store.ErrNotFound) || len(logins) != 0 || len(sessions) != 0 {
				e.violation("deleted user %s remains: %+v (%v), logins %+v, sessions %+v", id, u, err, logins, sessions)
			}
			continue
		}
		if _, err := e.mem.UserByID(ctx, id); errors.Is(err, store.ErrNotFound) {
			continue // a sign-in that found its login made no user
		}
		if logins, err := e.mem.Logins(ctx, id); err != nil || len(logins) == 0 {
			e.violation("user %s has no login: %v", id, err)
		}
	}
	for h, uid := range l.resetUser {
		if l.deleted[uid] {
			if _, err := e.mem.Code(ctx, store.CodeReset, h, now); !errors.Is(err, store.ErrNotFound) {
				e.violation("a reset token of deleted user %s remains: %v", uid, err)
			}
		}
	}
	// (l), (m), (n): a verification token used, or of a login unlinked or
	// of a user deleted, is gone.
	for h, t := range l.verify {
		if !l.verified[h] && !l.unlinked[t.LoginID] && !l.deleted[l.loginUser[t.LoginID]] {
			continue
		}
		if got, err := e.mem.VerifyEmail(ctx, h, now); !errors.Is(err, store.ErrNotFound) {
			e.violation("a verification token used, or whose login or user is gone, verifies: %+v, %v", got, err)
		}
	}
	// (m)
	for id := range l.unlinked {
		logins, _ := e.mem.Logins(ctx, l.loginUser[id])
		if slices.ContainsFunc(logins, func(o store.Login) bool { return o.ID == id }) {
			e.violation("unlinked login %s is still its user's", id)
		}
	}

	// Nobody is locked out: the user that owns an email is one a
	// credential the run knows reaches (a password that signs in, or a
	// provider identity)...
	for _, o := range owners {
		reachable := false
		logins, _ := e.mem.Logins(ctx, o.UserID)
		for _, lg := range logins {
			switch {
			case lg.Method == store.MethodEmailPassword && lg.PasswordHash != "":
				reachable = true
			case lg.Method == store.MethodThirdParty && slices.ContainsFunc(e.identities, func(id faultIdentity) bool {
				return faultIdentityKey(id.subject) == lg.LoginKey
			}):
				reachable = true
			case lg.Method == store.MethodPasswordless && slices.ContainsFunc(e.contacts, func(c faultContact) bool {
				return store.PasswordlessKey(c.address) == lg.LoginKey
			}):
				reachable = true
			case lg.Method == store.MethodWebAuthn && e.passkeyReaches(lg):
				reachable = true
			}
		}
		if !reachable {
			e.violation("login %s owns %s for user %s, which no credential reaches: %+v", o.ID, o.Email, o.UserID, logins)
		}
	}
	// ...and every provider identity signs in again, to its login's user.
	last := map[string]faultIdentity{}
	for _, id := range e.identities {
		last[id.subject] = id
	}
	for _, id := range e.identities {
		if last[id.subject] != id {
			continue
		}
		r := e.providerSignIn(e.srv.NewClient(authtest.Header), id.subject, id.email, id.verified)
		got, err := e.mem.Login(ctx, faultIdentityKey(id.subject))
		switch {
		case !r.ok():
			e.violation("provider identity %s (%s) cannot sign in: %v", id.subject, id.email, r)
		case err != nil || got.UserID != faultUserOf(r):
			e.violation("provider identity %s signed in as user %s, but its login is %+v, %v", id.subject, faultUserOf(r), got, err)
		case id.user != "" && got.UserID != id.user:
			e.violation("provider identity %s reaches user %s, want %s", id.subject, got.UserID, id.user)
		}
	}
	e.checkContacts()
}

// faultBreakage is a deliberate breakage of the library or its store,
// which the sweep of flow must catch.
type faultBreakage struct {
	name, flow string
	// store wraps the memstore: a store that breaks its contract.
	store func(inner store.Store, on *atomic.Bool) store.Store
	// handler wraps the faultstore, where the library's calls arrive: a
	// change of the library, simulated by changing what it asks.
	handler func(st store.Store, on *atomic.Bool) store.Store
}

// brokenStore is a store.Store whose methods with a replacement set do
// that instead while on is set.
type brokenStore struct {
	store.Store
	on *atomic.Bool

	signInUp           func(context.Context, store.Login, store.User) (store.Login, bool, error)
	linkLogin          func(context.Context, store.Login) error
	loginsByEmail      func(context.Context, string) ([]store.Login, error)
	createCode         func(context.Context, store.Code) error
	verifyEmail        func(context.Context, store.TokenHash, time.Time) (store.Login, error)
	deleteLogin        func(context.Context, string) ([]string, error)
	deleteUser         func(context.Context, string) ([]string, error)
	revokeUserSessions func(context.Context, string) ([]string, error)
	updatePasswordHash func(ctx context.Context, userID, oldHash, newHash string) error
}

func (b *brokenStore) UpdatePasswordHash(ctx context.Context, userID, oldHash, newHash string) error {
	if b.on.Load() && b.updatePasswordHash != nil {
		return b.updatePasswordHash(ctx, userID, oldHash, newHash)
	}
	return b.Store.UpdatePasswordHash(ctx, userID, oldHash, newHash)
}

func (b *brokenStore) SignInUp(ctx context.Context, l store.Login, u store.User) (store.Login, bool, error) {
	if b.on.Load() && b.signInUp != nil {
		return b.signInUp(ctx, l, u)
	}
	return b.Store.SignInUp(ctx, l, u)
}

func (b *brokenStore) LinkLogin(ctx context.Context, l store.Login) error {
	if b.on.Load() && b.linkLogin != nil {
		return b.linkLogin(ctx, l)
	}
	return b.Store.LinkLogin(ctx, l)
}

func (b *brokenStore) LoginsByEmail(ctx context.Context, email string) ([]store.Login, error) {
	if b.on.Load() && b.loginsByEmail != nil {
		return b.loginsByEmail(ctx, email)
	}
	return b.Store.LoginsByEmail(ctx, email)
}

func (b *brokenStore) CreateCode(ctx context.Context, c store.Code) error {
	if b.on.Load() && b.createCode != nil {
		return b.createCode(ctx, c)
	}
	return b.Store.CreateCode(ctx, c)
}

func (b *brokenStore) VerifyEmail(ctx context.Context, h store.TokenHash, now time.Time) (store.Login, error) {
	if b.on.Load() && b.verifyEmail != nil {
		return b.verifyEmail(ctx, h, now)
	}
	return b.Store.VerifyEmail(ctx, h, now)
}

func (b *brokenStore) DeleteLogin(ctx context.Context, id string) ([]string, error) {
	if b.on.Load() && b.deleteLogin != nil {
		return b.deleteLogin(ctx, id)
	}
	return b.Store.DeleteLogin(ctx, id)
}

func (b *brokenStore) DeleteUser(ctx context.Context, id string) ([]string, error) {
	if b.on.Load() && b.deleteUser != nil {
		return b.deleteUser(ctx, id)
	}
	return b.Store.DeleteUser(ctx, id)
}

func (b *brokenStore) RevokeUserSessions(ctx context.Context, id string) ([]string, error) {
	if b.on.Load() && b.revokeUserSessions != nil {
		return b.revokeUserSessions(ctx, id)
	}
	return b.Store.RevokeUserSessions(ctx, id)
}

// faultBreakages are the deliberate breakages, one or more per flow of
// fault_linking_test.go, and those of fault_passwordless_test.go.
func faultBreakages() []faultBreakage {
	return append([]faultBreakage{
		{
			name: "a new provider login owns its email with linking off", flow: "thirdparty-signup",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				b.signInUp = func(ctx context.Context, l store.Login, u store.User) (store.Login, bool, error) {
					l.OwnsEmail = true
					return st.SignInUp(ctx, l, u)
				}
				return b
			},
		},
		{
			name: "the provider's subject is lost: every sign-in a new user", flow: "thirdparty-signin",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				b.signInUp = func(ctx context.Context, l store.Login, u store.User) (store.Login, bool, error) {
					l.Subject = uuid.NewString()
					return st.SignInUp(ctx, l, u)
				}
				return b
			},
		},
		{
			name: "a sign-in keeps the login's old email", flow: "thirdparty-email-change",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: inner, on: on}
				b.signInUp = func(ctx context.Context, l store.Login, u store.User) (store.Login, bool, error) {
					if old, err := inner.Login(ctx, l.LoginKey); err == nil {
						l.Email = old.Email
					}
					return inner.SignInUp(ctx, l, u)
				}
				return b
			},
		},
		{
			name: "a join reports success and writes nothing", flow: "link-join",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: inner, on: on}
				b.linkLogin = func(context.Context, store.Login) error { return nil }
				return b
			},
		},
		{
			name: "a join that ends the sessions of a proven user", flow: "link-join",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				b.linkLogin = func(ctx context.Context, l store.Login) error {
					if _, err := st.RevokeUserSessions(ctx, l.UserID); err != nil {
						return err
					}
					return st.LinkLogin(ctx, l)
				}
				return b
			},
		},
		{
			name: "a join with eviction that skips ending the sessions", flow: "link-evict",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				b.revokeUserSessions = func(context.Context, string) ([]string, error) { return nil, nil }
				return b
			},
		},
		{
			name: "a join with eviction that keeps the password", flow: "link-evict",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				b.updatePasswordHash = func(ctx context.Context, userID, oldHash, newHash string) error {
					if newHash == "" {
						return nil
					}
					return st.UpdatePasswordHash(ctx, userID, oldHash, newHash)
				}
				return b
			},
		},
		{
			// Right without faults; a fault after the join and before the
			// eviction leaves the stranger's password and sessions on the
			// joined user.
			name: "a join with eviction that joins first", flow: "link-evict",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				var later []func(context.Context) error
				b.updatePasswordHash = func(ctx context.Context, userID, oldHash, newHash string) error {
					if newHash != "" {
						return st.UpdatePasswordHash(ctx, userID, oldHash, newHash)
					}
					later = append(later, func(ctx context.Context) error { return st.UpdatePasswordHash(ctx, userID, oldHash, newHash) })
					return nil
				}
				b.revokeUserSessions = func(ctx context.Context, userID string) ([]string, error) {
					later = append(later, func(ctx context.Context) error { _, err := st.RevokeUserSessions(ctx, userID); return err })
					return nil, nil
				}
				b.linkLogin = func(ctx context.Context, l store.Login) error {
					if err := st.LinkLogin(ctx, l); err != nil {
						return err
					}
					for len(later) > 0 {
						step := later[0]
						later = later[1:]
						if err := step(ctx); err != nil {
							return err
						}
					}
					return nil
				}
				return b
			},
		},
		{
			name: "a store that forgets who has an email", flow: "link-refused",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: inner, on: on}
				b.loginsByEmail = func(context.Context, string) ([]store.Login, error) { return nil, nil }
				return b
			},
		},
		{
			name: "a verification token reported stored and not written", flow: "verify-send",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: inner, on: on}
				b.createCode = func(context.Context, store.Code) error { return nil }
				return b
			},
		},
		faultReusableVerification("verify-session"),
		{
			name: "a verification link that proves the email", flow: "verify-nosession",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: new(atomic.Bool)}
				b.on.Store(true) // to see the tokens of setup
				loginOf := map[store.TokenHash]string{}
				b.createCode = func(ctx context.Context, t store.Code) error {
					loginOf[t.Hash] = t.LoginID
					return st.CreateCode(ctx, t)
				}
				b.verifyEmail = func(ctx context.Context, h store.TokenHash, now time.Time) (store.Login, error) {
					l, err := st.VerifyEmail(ctx, h, now)
					if on.Load() && err == nil {
						return st.SetEmailVerified(ctx, loginOf[h], true)
					}
					return l, err
				}
				return b
			},
		},
		{
			name: "an unlink reported done that removes nothing", flow: "unlink",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: inner, on: on}
				b.deleteLogin = func(context.Context, string) ([]string, error) { return nil, nil }
				return b
			},
		},
		faultDeleteKeepsUser("delete-user"),
		faultDeleteKeepsUser("delete-user-nocheck"),
	}, slices.Concat(faultPasswordlessBreakages(), faultPasskeyBreakages(), faultMFABreakages())...)
}

// faultDeleteKeepsUser is a DeleteUser that ends the user's sessions and
// deletes nothing.
func faultDeleteKeepsUser(flow string) faultBreakage {
	return faultBreakage{
		name: "DeleteUser that ends the sessions and keeps the user", flow: flow,
		handler: func(st store.Store, on *atomic.Bool) store.Store {
			b := &brokenStore{Store: st, on: on}
			b.deleteUser = func(ctx context.Context, id string) ([]string, error) { return st.RevokeUserSessions(ctx, id) }
			return b
		},
	}
}

// faultReusableVerification is a store whose verification tokens verify
// and are not used up.
func faultReusableVerification(flow string) faultBreakage {
	return faultBreakage{
		name: "a verification token that is not used up", flow: flow,
		store: func(inner store.Store, on *atomic.Bool) store.Store {
			b := &brokenStore{Store: inner, on: on}
			tokens := map[store.TokenHash]store.Code{}
			b.createCode = func(ctx context.Context, t store.Code) error {
				tokens[t.Hash] = t
				return inner.CreateCode(ctx, t)
			}
			b.verifyEmail = func(ctx context.Context, h store.TokenHash, now time.Time) (store.Login, error) {
				l, err := inner.VerifyEmail(ctx, h, now)
				if t, ok := tokens[h]; ok && err == nil {
					inner.CreateCode(ctx, t)
				}
				return l, err
			}
			// On from the start, so that the tokens made in setup are
			// remembered; only the flow verifies.
			b.on = new(atomic.Bool)
			b.on.Store(true)
			return b
		},
	}
}

// TestFaultBreakage runs the sweep of a flow with each deliberate
// breakage in place: every one must make it report a violation, in the
// fault-free run or under some fault. The sweep stops at the first run
// that reports one.
func TestFaultBreakage(t *testing.T) {
	flows := map[string]faultFlow{}
	for _, f := range faultFlows() {
		flows[f.name] = f
	}
	for _, b := range faultBreakages() {
		f, ok := flows[b.flow]
		if !ok {
			t.Fatalf("breakage %q: no flow %s", b.name, b.flow)
		}
		t.Run(b.flow+"/"+b.name, func(t *testing.T) {
			t.Parallel()
			m := f.modes[0]
			var calls []string
			runs, caught, by := 1, 0, "the fault-free run"
			t.Run("fault-free", func(t *testing.T) {
				calls, caught = faultRunBroken(t, f, m, nil, "", &b)
			})
			for k := 0; k < len(calls) && caught == 0; k++ {
				for _, fc := range faultCombos {
					if caught > 0 {
						break
					}
					p := faultstore.Plan{Call: k + 1, When: fc.when, Kind: fc.kind, Delay: faultDelay}
					by = fmt.Sprintf("%d-%s-%s-%s", k+1, calls[k], fc.kind, fc.when)
					t.Run(by, func(t *testing.T) {
						_, caught = faultRunBroken(t, f, m, &p, calls[k], &b)
						runs++
					})
				}
			}
			if caught == 0 {
				t.Errorf("breakage %q went unnoticed in %d runs of %s", b.name, runs, b.flow)
				return
			}
			t.Logf("breakage %q of %s: caught by %s (run %d of at most %d), %d violations", b.name, b.flow, by, runs, 1+len(calls)*len(faultCombos), caught)
		})
	}
}
