package auth_test

// The fault sweep's flows of the account's self-service (see
// fault_test.go): adding a provider while signed in, and opening the link
// that changes the account's email. Beside the sweep's invariants, each
// checks that whatever fails, a login is never half added or in two
// users, and an address is never lost or in two places: exactly one of
// the old and the new signs in.

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/faultstore"
)

func faultAccountFlows() []faultFlow {
	link := faultFlow{
		name:       "link-with-session",
		modes:      faultModes,
		thirdParty: true,
		setup: func(e *faultEnv, c *authtest.Client) {
			e.subject, e.email = "fault-"+uuid.NewString(), e.srv.NewEmail()
			a := e.providerSignIn(c, e.subject, e.email, true)
			if !a.ok() {
				e.fatal("setup: provider sign-up: %v", a)
			}
			e.userID = faultUserOf(a)
			e.linking = "fault-" + uuid.NewString()
			e.signInUp = e.linkBody(c, e.linking)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer { return e.postSignInUp(c, e.signInUp) },
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			l, err := e.mem.Login(e.t.Context(), faultIdentityKey(e.linking))
			switch {
			case err == nil && l.UserID != e.userID:
				e.violation("the identity added while signed in went to user %s, want %s", l.UserID, e.userID)
			case a.ok() && err != nil:
				e.violation("linking answered OK, and the identity is in no user: %v", err)
			case err != nil:
				// The client tries again, from the provider.
				if r := e.postSignInUp(c, e.linkBody(c, e.linking)); !r.ok() {
					e.violation("linking again after a failure: %v, want OK", r)
				}
			}
			r := e.providerSignIn(e.srv.NewClient(authtest.Header), e.linking, "linked-"+e.email, true)
			if faultUserOf(r) != e.userID {
				e.violation("the added identity signs in to %q, want %s", faultUserOf(r), e.userID)
			}
		},
	}
	change := faultFlow{
		name:           "email-change-verify",
		modes:          []authtest.Mode{authtest.Header},
		configure:      func(cfg *auth.Config) { cfg.EmailChange.Enabled = true },
		offPathMethods: map[string]bool{"CreateCode": true},
		setup: func(e *faultEnv, c *authtest.Client) {
			e.mustSignUp(c)
			e.moveTo = "moved-" + e.email
			before := len(e.srv.Mailbox.Messages())
			body, _ := json.Marshal(map[string]string{"email": e.moveTo})
			access, _ := c.Tokens()
			if a := e.send(c, http.MethodPost, "/auth/user/email/change", body, "emailchange", access); !a.ok() {
				e.fatal("setup: email change request: %v", a)
			}
			_, e.verifyTok = authtest.ResetLink(e.t, e.srv.Mailbox.LastTo(e.t, e.moveTo, before, 5*time.Second))
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			a := e.useEmailChange(c)
			if a.ok() {
				e.waitForCall("CreateCode") // the notice's code, off the request's path
			}
			return a
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if !a.ok() && !e.committed("ChangeEmail") {
				if r := e.useEmailChange(c); !r.ok() {
					e.violation("the link again after a failure before the change: %v, want OK", r)
				}
			}
			moved := e.signIn(e.srv.NewClient(authtest.Header), e.moveTo, authtest.Password).ok()
			stayed := e.signIn(e.srv.NewClient(authtest.Header), e.email, authtest.Password).ok()
			switch {
			case moved == stayed:
				e.violation("after the email change, the new address signs in %v and the old %v: want exactly one", moved, stayed)
			case !moved:
				e.violation("the email change answered %v and left the old address", a)
			case !a.ok():
				e.finding("the email change failed after it committed: the link then says it is used, and the new address signs in")
			}
		},
	}
	return []faultFlow{link, change}
}

// linkBody is the /signinup body that adds the identity subject to the
// user of c's session, prepared before the fault.
func (e *faultEnv) linkBody(c *authtest.Client, subject string) []byte {
	e.t.Helper()
	var body map[string]any
	if err := json.Unmarshal(e.authorise(c, subject, "linked-"+e.email, true), &body); err != nil {
		e.fatal("the /signinup body: %v", err)
	}
	body["shouldTryLinkingWithSessionUser"] = true
	b, _ := json.Marshal(body)
	return b
}

// waitForCall waits, for a few seconds at most, until the armed store has
// seen a call of method: work the outbox does after the answer, which the
// run must see start before it counts the flow's calls.
func (e *faultEnv) waitForCall(method string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if slices.Contains(faultstore.Methods(e.fs.Armed()), method) {
			return
		}
	}
}

// useEmailChange opens the email change link of the flow, with c's
// session, as it must be.
func (e *faultEnv) useEmailChange(c *authtest.Client) faultAnswer {
	e.t.Helper()
	b, _ := json.Marshal(map[string]string{"token": e.verifyTok})
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth/user/email/change/verify", b, "emailchange", access)
}
