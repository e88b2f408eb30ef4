package auth_test

// The fault sweep (fault_test.go) over passwordless sign-in: asking for a
// code and for another, using a code or a link to sign up or in, a wrong
// code, and, under account linking, a sign-in that evicts an unproven
// password login and joins its user. Besides the sweep's invariants,
// each flow checks that a fault never yields a session for a wrong code
// and never loses a code's single use (a code or link that was used, even
// by a request that then failed, never works again), and that whoever
// reads the inbox still signs in: with the code, if the faulted request
// did not use it, or by starting again. No device id, link or link code
// reaches the store or the log (the sweep's secrets), nor a code.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
)

// faultContact is an address a passwordless flow signed in with. It must
// sign in again by code once the run is over, to user, if set.
type faultContact struct {
	address, user string
}

// faultPLFlow is a passwordless flow as the browser that started it
// knows it, with the code and link it was sent last.
type faultPLFlow struct {
	plFlow
	code, link string
}

func (e *faultEnv) plCreate(c *authtest.Client, address string) faultAnswer {
	e.t.Helper()
	b, _ := json.Marshal(map[string]string{"email": address})
	return e.send(c, http.MethodPost, "/auth/signinup/code", b, "passwordless", "")
}

func (e *faultEnv) plResend(c *authtest.Client, f faultPLFlow) faultAnswer {
	e.t.Helper()
	b, _ := json.Marshal(map[string]string{"deviceId": f.device, "preAuthSessionId": f.pre})
	return e.send(c, http.MethodPost, "/auth/signinup/code/resend", b, "passwordless", "")
}

func (e *faultEnv) plConsume(c *authtest.Client, f faultPLFlow, code string) faultAnswer {
	e.t.Helper()
	b, _ := json.Marshal(map[string]string{"preAuthSessionId": f.pre, "deviceId": f.device, "userInputCode": code})
	return e.send(c, http.MethodPost, "/auth/signinup/code/consume", b, "passwordless", "")
}

func (e *faultEnv) plOpen(c *authtest.Client, link string) faultAnswer {
	e.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"preAuthSessionId": u.Query().Get("preAuthSessionId"), "linkCode": u.Fragment})
	return e.send(c, http.MethodPost, "/auth/signinup/code/consume", b, "passwordless", "")
}

// plFlowOf reads the ids of a flow from an OK answer of /signinup/code.
func plFlowOf(a faultAnswer) faultPLFlow {
	var f faultPLFlow
	if !a.api && a.err == nil {
		f.device, _ = a.res.JSON["deviceId"].(string)
		f.pre, _ = a.res.JSON["preAuthSessionId"].(string)
	}
	return f
}

// plMailed waits for the outbox to send the code of the request just
// answered OK, and reads it into f: the mailed code and link become the
// flow's, and secrets of the run.
func (e *faultEnv) plMailed(f *faultPLFlow, before int) bool {
	e.t.Helper()
	if ev, ok := e.mailOutcome(); !ok || ev.Kind != auth.EventPasswordlessCodeSent {
		e.violation("a code answered sent: outcome %q", ev.Kind)
		return false
	}
	msgs := e.srv.Mailbox.WaitFor(e.t, before+1, faultRequestTimeout)
	m := msgs[len(msgs)-1]
	f.code, f.link = plCodeOf(e.t, m), plLinkOf(e.t, m)
	e.secrets[f.device], e.secrets[f.link] = true, true
	if _, lc, ok := strings.Cut(f.link, "#"); ok {
		e.secrets[lc] = true
	}
	return true
}

// mustPLFlow starts a flow for e.email with c, outside any fault, and
// returns it with the code and link it was sent.
func (e *faultEnv) mustPLFlow(c *authtest.Client) faultPLFlow {
	e.t.Helper()
	before := len(e.srv.Mailbox.Messages())
	a := e.plCreate(c, e.email)
	if !a.ok() {
		e.fatal("asking for a code without faults: %v", a)
	}
	f := plFlowOf(a)
	if !e.plMailed(&f, before) {
		e.t.FailNow()
	}
	return f
}

// plSignIn signs c in by code from the start, outside any fault, and
// returns the answer.
func (e *faultEnv) plSignIn(c *authtest.Client) faultAnswer {
	e.t.Helper()
	f := e.mustPLFlow(c)
	return e.plConsume(c, f, f.code)
}

// plDone checks that nothing of a flow works any more: its code, its
// link, a resend.
func (e *faultEnv) plDone(what string, f faultPLFlow) {
	e.t.Helper()
	c := e.srv.NewClient(authtest.Header)
	if r := e.plConsume(c, f, f.code); !r.is(http.StatusOK, "RESTART_FLOW_ERROR") {
		e.violation("%s: the flow's code once more: %v, want RESTART_FLOW_ERROR: a code works twice", what, r)
	}
	if r := e.plOpen(c, f.link); !r.is(http.StatusOK, "RESTART_FLOW_ERROR") {
		e.violation("%s: the flow's link once more: %v, want RESTART_FLOW_ERROR: a link works twice", what, r)
	}
	if r := e.plResend(c, f); !r.is(http.StatusOK, "RESTART_FLOW_ERROR") {
		e.violation("%s: a resend of the flow: %v, want RESTART_FLOW_ERROR", what, r)
	}
}

// plRetry is what a person does after a sign-in by code answered a: if
// the code was not used, types it again; if it was, starts again. It
// returns the answer that counts, which must be OK.
func (e *faultEnv) plRetry(c *authtest.Client, f faultPLFlow, a faultAnswer, byLink bool) faultAnswer {
	e.t.Helper()
	if a.ok() {
		return a
	}
	used := e.committed("UsePasswordlessCode")
	var r faultAnswer
	if byLink {
		r = e.plOpen(c, f.link)
	} else {
		r = e.plConsume(c, f, f.code)
	}
	switch {
	case used && !r.is(http.StatusOK, "RESTART_FLOW_ERROR"):
		e.violation("the code again after its use committed and the sign-in failed: %v, want RESTART_FLOW_ERROR: a code works twice", r)
	case !used && !r.ok():
		e.violation("the code again after a failure before its use committed: %v, want OK", r)
	case used:
		e.finding("passwordless: the code was used and the sign-in failed after: the person asks for another code")
		if r = e.plSignIn(c); !r.ok() {
			e.violation("signing in with a new code after a failed sign-in: %v, want OK", r)
		}
	}
	return r
}

// plSignInAfter is the check of a sign-in by the code or link of f that
// answered a: the person gets in, to user if set, or else to one user
// whatever the tries, the flow is done, and the address is one the run
// signs in with again.
func (e *faultEnv) plSignInAfter(c *authtest.Client, f faultPLFlow, a faultAnswer, byLink bool, user string) {
	e.t.Helper()
	if a.ok() && (!e.committed("UsePasswordlessCode") || !e.committed("CreateSession")) {
		e.violation("a passwordless sign-in answered OK without using its code and committing a session")
	}
	r := e.plRetry(c, f, a, byLink)
	got := faultUserOf(r)
	switch {
	case got == "":
	case user != "" && got != user:
		e.violation("the passwordless sign-in of %s reached user %s, want %s", e.email, got, user)
	case a.ok() && faultUserOf(a) != got:
		e.violation("the passwordless sign-in reached user %s, and the retry %s", faultUserOf(a), got)
	}
	e.plDone("after the sign-in", f)
	var logins []store.Login
	for _, l := range loginsWithEmail(e.t, e.mem, e.email) {
		if l.Method == store.MethodPasswordless {
			logins = append(logins, l)
		}
	}
	if len(logins) != 1 || got != "" && logins[0].UserID != got || !logins[0].EmailProven || !logins[0].EmailVerified {
		e.violation("the passwordless logins of %s after the sign-in: %+v; want one, proven and verified, of user %s", e.email, logins, got)
	}
	e.contacts = append(e.contacts, faultContact{address: e.email, user: got})
}

// checkContacts signs in again by code with every address a flow signed
// in with: it reaches the user it reached then. And no log record holds
// a code that was mailed.
func (e *faultEnv) checkContacts() {
	e.t.Helper()
	for _, ct := range e.contacts {
		e.email = ct.address
		c := e.srv.NewClient(authtest.Header)
		r := e.plSignIn(c)
		switch {
		case !r.ok():
			e.violation("%s cannot sign in by code: %v", ct.address, r)
		case ct.user != "" && faultUserOf(r) != ct.user:
			e.violation("%s signs in by code to user %s, want %s", ct.address, faultUserOf(r), ct.user)
		}
	}
	log := e.log.String()
	for _, m := range e.srv.Mailbox.Messages() {
		if sub := plCodeLine.FindStringSubmatch(m.Text); sub != nil && regexp.MustCompile(`(^|[^0-9A-Za-z])`+sub[1]+`([^0-9A-Za-z]|$)`).MatchString(log) {
			e.violation("the log holds the code %s mailed to %s", sub[1], m.To.Address)
		}
	}
}

// faultPasswordlessFlows are the flows of passwordless sign-in.
func faultPasswordlessFlows() []faultFlow {
	config := func(linking bool) func(*auth.Config) {
		return func(cfg *auth.Config) {
			cfg.Passwordless.Flow = passwordless.CodeAndLink
			cfg.AccountLinking = linking
			cfg.CheckSessionInStore = linking
		}
	}
	header := []authtest.Mode{authtest.Header}

	create := faultFlow{
		name:      "passwordless-create",
		modes:     header,
		configure: config(false),
		setup:     func(e *faultEnv, c *authtest.Client) { e.email = e.srv.NewEmail() },
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			a := e.plCreate(c, e.email)
			if a.ok() {
				e.mailOutcome() // the flow includes the outbox's work
			}
			return a
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			msgs := e.srv.Mailbox.Messages()
			var f faultPLFlow
			switch {
			case a.ok() && len(msgs) != 1:
				e.violation("a code answered sent: %d messages, want 1", len(msgs))
				return
			case !a.ok() && len(msgs) != 0:
				e.violation("a code went out although the request failed (%v)", a)
				return
			case a.ok():
				f = plFlowOf(a)
				f.code, f.link = plCodeOf(e.t, msgs[0]), plLinkOf(e.t, msgs[0])
				e.secrets[f.device], e.secrets[f.link] = true, true
			default:
				if e.committed("CreateCode") {
					e.finding("passwordless: a flow or code committed, the request failed: nobody holds its device id or got its code")
				}
				// The person asks again.
				f = e.mustPLFlow(c)
			}
			r := e.plConsume(c, f, f.code)
			if !r.ok() {
				e.violation("the code of the flow asked for: %v, want OK", r)
			}
			e.plDone("after the sign-in", f)
			e.contacts = append(e.contacts, faultContact{address: e.email, user: faultUserOf(r)})
		},
	}

	resend := faultFlow{
		name:      "passwordless-resend",
		modes:     header,
		configure: config(false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.email = e.srv.NewEmail()
			e.pl = e.mustPLFlow(c)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			f := e.pl
			a := e.plResend(c, f)
			if a.ok() {
				e.mailOutcome()
			}
			return a
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			first := e.pl
			msgs := e.srv.Mailbox.Messages()
			switch {
			case a.ok() && len(msgs) != 2:
				e.violation("a resend answered sent: %d messages in all, want 2", len(msgs))
			case !a.ok() && len(msgs) != 1:
				e.violation("a resend that failed (%v) sent a code", a)
			}
			f := first
			if a.ok() && len(msgs) == 2 {
				second := first
				second.code, second.link = plCodeOf(e.t, msgs[1]), plLinkOf(e.t, msgs[1])
				e.secrets[second.link] = true
				if second.code == first.code {
					e.violation("a resend sent the code the flow was sent already")
				}
				f = second
			} else if e.committed("CreateCode") {
				e.finding("passwordless: a resend committed a code and failed: the code was never sent")
			}
			// The newest code sent works; then no code of the flow does.
			if r := e.plConsume(c, f, f.code); !r.ok() {
				e.violation("the newest code of the flow after the resend (%v): %v, want OK", a, r)
			}
			e.plDone("after the sign-in", first)
			e.plDone("after the sign-in", f)
		},
	}

	// signIn is a sign-in by the code (or link) of a flow started in
	// setup, of a new address or of a passwordless user's.
	signIn := func(name string, modes []authtest.Mode, byLink, returning bool) faultFlow {
		return faultFlow{
			name:      name,
			modes:     modes,
			configure: config(false),
			setup: func(e *faultEnv, c *authtest.Client) {
				e.email = e.srv.NewEmail()
				if returning {
					r := e.plSignIn(e.srv.NewClient(authtest.Header))
					if e.userID = faultUserOf(r); e.userID == "" {
						e.t.Fatalf("setup: passwordless sign-up: %v", r)
					}
				}
				e.pl = e.mustPLFlow(c)
			},
			run: func(e *faultEnv, c *authtest.Client) faultAnswer {
				f := e.pl
				if byLink {
					return e.plOpen(c, f.link)
				}
				return e.plConsume(c, f, f.code)
			},
			after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
				f := e.pl
				e.plSignInAfter(c, f, a, byLink, e.userID)
				if !returning && a.ok() && a.res.JSON["createdNewRecipeUser"] != true {
					e.violation("a passwordless sign-up answered createdNewRecipeUser %v", a.res.JSON["createdNewRecipeUser"])
				}
			},
		}
	}

	wrong := faultFlow{
		name:      "passwordless-wrong",
		modes:     header,
		configure: config(false),
		status:    "INCORRECT_USER_INPUT_CODE_ERROR",
		setup: func(e *faultEnv, c *authtest.Client) {
			e.email = e.srv.NewEmail()
			e.pl = e.mustPLFlow(c)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			f := e.pl
			return e.plConsume(c, f, plOther(f.code))
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			f := e.pl
			if a.ok() || a.err == nil && a.res.IssuedTokens() || e.committed("CreateSession") || e.committed("SignInUp") {
				e.violation("a wrong code signed in: %v", a)
			}
			// The flow counted the wrong code if its use committed, and
			// only then; the right code still works.
			counted := 0
			for _, call := range e.fs.Armed() {
				if call.Method == "UsePasswordlessCode" && call.Delegated && errors.Is(call.Err, store.ErrWrongCode) {
					counted++
				}
			}
			if r := e.plConsume(c, f, plOther(f.code)); !r.is(http.StatusOK, "INCORRECT_USER_INPUT_CODE_ERROR") ||
				r.res.JSON["failedCodeInputAttemptCount"] != float64(counted+1) {
				e.violation("a second wrong code: %v, want INCORRECT_USER_INPUT_CODE_ERROR, failure %d", r, counted+1)
			}
			if r := e.plConsume(c, f, f.code); !r.ok() {
				e.violation("the right code after wrong ones: %v, want OK", r)
			}
			e.plDone("after the sign-in", f)
			e.contacts = append(e.contacts, faultContact{address: e.email})
		},
	}

	// Under account linking, a passwordless sign-in meets a password
	// login of the address that nobody proved: the password is voided,
	// its sessions end, and the passwordless login joins its user as the
	// owner of the address.
	evict := faultFlow{
		name:      "passwordless-evict",
		modes:     header,
		configure: config(true),
		setup: func(e *faultEnv, c *authtest.Client) {
			first, second := e.srv.NewClient(authtest.Header), e.srv.NewClient(authtest.Cookie)
			e.mustSignUp(first)
			if a := e.signIn(second, e.email, authtest.Password); !a.ok() {
				e.t.Fatalf("setup: sign-in: %v", a)
			}
			e.userID = e.mustUser()
			e.ending = []*authtest.Client{first, second}
			e.pl = e.mustPLFlow(c)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			f := e.pl
			return e.plConsume(c, f, f.code)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			f := e.pl
			e.plSignInAfter(c, f, a, false, e.userID)
			// (o)
			if r := e.signIn(e.srv.NewClient(authtest.Header), e.email, authtest.Password); r.ok() || r.err != nil {
				e.violation("after a passwordless join with eviction, the old password: %v, want no sign-in", r)
			}
			e.wantEnded("a passwordless join with eviction", false)
			owner, err := e.mem.Login(e.t.Context(), store.PasswordlessKey(e.email))
			if err != nil || !owner.OwnsEmail || owner.UserID != e.userID {
				e.violation("the passwordless login after the join: %+v, %v; want it to own %s for user %s", owner, err, e.email, e.userID)
			}
		},
	}

	return []faultFlow{
		create,
		resend,
		signIn("passwordless-signup", faultModes, false, false),
		signIn("passwordless-signin", header, false, true),
		signIn("passwordless-link", header, true, false),
		wrong,
		evict,
	}
}

// faultPLStore is a store.Store whose UsePasswordlessCode does use
// instead while on is set.
type faultPLStore struct {
	store.Store
	on  *atomic.Bool
	use func(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error)
}

func (b *faultPLStore) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	if b.on.Load() && b.use != nil {
		return b.use(ctx, flow, code, now, maxAttempts)
	}
	return b.Store.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
}

// faultPasswordlessBreakages are the deliberate breakages of the
// passwordless flows.
func faultPasswordlessBreakages() []faultBreakage {
	return []faultBreakage{
		{
			// A store whose codes work and stay: every use of one puts
			// the flow and its codes back.
			name: "a passwordless code that is not used up", flow: "passwordless-signup",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				b := &faultPLStore{Store: inner, on: new(atomic.Bool)}
				b.on.Store(true) // from the start, to see the codes of setup
				var kept []store.Code
				b.Store = &faultPLKeeper{Store: inner, kept: &kept}
				b.use = func(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
					f, err := inner.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
					if err == nil && on.Load() {
						for _, c := range kept {
							inner.CreateCode(ctx, c)
						}
					}
					return f, err
				}
				return b
			},
		},
		{
			// The library, changed to ask the store to take any code.
			name: "a wrong code taken for the right one", flow: "passwordless-wrong",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				var codes []store.Code
				b := &faultPLStore{Store: &faultPLKeeper{Store: st, kept: &codes}, on: on}
				b.use = func(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
					for _, c := range codes {
						if c.Kind == store.CodePasswordless && c.Flow == flow {
							code = c.Hash
						}
					}
					return st.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
				}
				return b
			},
		},
		{
			// A store that counts no wrong code: the flow never ends.
			name: "wrong codes not counted", flow: "passwordless-wrong",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				return &faultPLStore{Store: inner, on: on,
					use: func(ctx context.Context, flow, code store.TokenHash, now time.Time, _ int) (store.Code, error) {
						return inner.UsePasswordlessCode(ctx, flow, code, now, 0)
					}}
			},
		},
		{
			// A store that forgets who has an email: the passwordless
			// sign-in makes a user of its own instead of joining the
			// password user's, whose maker keeps the password and the
			// sessions.
			name: "a passwordless join that makes a user instead", flow: "passwordless-evict",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				b.loginsByEmail = func(context.Context, string) ([]store.Login, error) { return nil, nil }
				return b
			},
		},
		{
			name: "a passwordless code reported sent and not stored", flow: "passwordless-create",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: inner, on: on}
				b.createCode = func(ctx context.Context, c store.Code) error {
					if c.Kind == store.CodePasswordless {
						return nil
					}
					return inner.CreateCode(ctx, c)
				}
				return b
			},
		},
	}
}

// faultPLKeeper is a store.Store that keeps a copy of every code it is
// asked to create.
type faultPLKeeper struct {
	store.Store
	kept *[]store.Code
}

func (k *faultPLKeeper) CreateCode(ctx context.Context, c store.Code) error {
	err := k.Store.CreateCode(ctx, c)
	if err == nil {
		*k.kept = append(*k.kept, c)
	}
	return err
}
