package auth_test

// The fault sweep (fault_test.go) over passkeys: sign-up, sign-in, a
// replayed assertion, a clone's, adding a passkey in a session, and
// recovery by a mailed link, with account linking off and on. Besides
// the sweep's invariants, each flow checks that a fault never yields a
// session for an assertion the server must refuse, never lets a
// ceremony's options (or a recovery link) answer twice, never loses the
// passkey's counter, and that whoever holds the passkey still gets in:
// by posting again, if the faulted request used nothing up, or by
// starting again. A recovery that answered OK ended every earlier
// passkey and session of the user; the recovery token is one of the
// sweep's secrets.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/store"
)

// faultPasskey is what a passkey flow holds: the passkey it signs in
// with, the options and credential of the faulted request, a recovery
// token and the recovery's new passkey.
type faultPasskey struct {
	a     *authtest.Authenticator
	opts  pkOptions
	cred  []byte
	token string
	fresh *authtest.Authenticator
	// reach are the passkeys that sign in to their user at the end of
	// the run: an owner of an address among them is reachable.
	reach map[store.LoginKey]bool
	// material is the stored passkey before the faulted request.
	material []byte
}

// pkSend posts body to a passkey endpoint with c and its session.
func (e *faultEnv) pkSend(c *authtest.Client, path string, body any) faultAnswer {
	e.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	access, _ := c.Tokens()
	return e.send(c, http.MethodPost, "/auth"+path, b, "webauthn", access)
}

// pkOptions asks for options outside any fault.
func (e *faultEnv) pkOptions(c *authtest.Client, path string, body any) pkOptions {
	e.t.Helper()
	a := e.pkSend(c, path, body)
	id, _ := a.res.JSON["webauthnGeneratedOptionsId"].(string)
	if !a.ok() || id == "" {
		e.fatal("options from %s: %v", path, a)
	}
	return pkOptions{id: id, body: a.res.Body}
}

func (e *faultEnv) pkSignUpWith(c *authtest.Client, o pkOptions, cred []byte) faultAnswer {
	e.t.Helper()
	return e.pkSend(c, "/webauthn/signup", map[string]any{"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(cred)})
}

func (e *faultEnv) pkSignInWith(c *authtest.Client, o pkOptions, cred []byte) faultAnswer {
	e.t.Helper()
	return e.pkSend(c, "/webauthn/signin", map[string]any{"webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(cred)})
}

func (e *faultEnv) pkRecoverWith(c *authtest.Client, o pkOptions, cred []byte, token string) faultAnswer {
	e.t.Helper()
	return e.pkSend(c, "/user/webauthn/reset", map[string]any{"token": token, "webauthnGeneratedOptionsId": o.id, "credential": json.RawMessage(cred)})
}

// pkSignIn signs c in with the newest passkey of a, or with the passkey
// with the credential id of opts, outside any fault.
func (e *faultEnv) pkSignIn(c *authtest.Client, a *authtest.Authenticator, opts ...authtest.CeremonyOption) faultAnswer {
	e.t.Helper()
	o := e.pkOptions(c, "/webauthn/options/signin", struct{}{})
	return e.pkSignInWith(c, o, pkAssert(e.t, a, o, opts...))
}

// pkMustSignUp signs a new passkey user up for a new address with c,
// outside any fault: the flow's email, user and passkey.
func (e *faultEnv) pkMustSignUp(c *authtest.Client) {
	e.t.Helper()
	e.email = e.srv.NewEmail()
	e.pk.a = e.srv.NewAuthenticator()
	o := e.pkOptions(c, "/webauthn/options/register", map[string]string{"email": e.email})
	a := e.pkSignUpWith(c, o, pkRegister(e.t, e.pk.a, o))
	if e.userID = faultUserOf(a); !a.ok() || e.userID == "" {
		e.t.Fatalf("setup: passkey sign-up: %v", a)
	}
}

// pkKey is the login key of the newest passkey of a.
func (e *faultEnv) pkKey(a *authtest.Authenticator) store.LoginKey {
	return store.WebAuthnKey("app.example.com", pkCredID(a))
}

// pkStored is the stored login of the newest passkey of a, and whether
// there is one.
func (e *faultEnv) pkStored(a *authtest.Authenticator) (store.Login, bool) {
	l, err := e.mem.Login(e.t.Context(), e.pkKey(a))
	return l, err == nil
}

// pkReaches checks that the newest passkey of a signs in to user, and
// counts it among the passkeys that reach their user.
func (e *faultEnv) pkReaches(what string, a *authtest.Authenticator, user string) {
	e.t.Helper()
	r := e.pkSignIn(e.srv.NewClient(authtest.Header), a)
	if got := faultUserOf(r); !r.ok() || got != user {
		e.violation("%s: the passkey signs in: %v, want user %s", what, r, user)
		return
	}
	if e.pk.reach == nil {
		e.pk.reach = map[store.LoginKey]bool{}
	}
	e.pk.reach[e.pkKey(a)] = true
}

// passkeyReaches reports whether l is a passkey the run saw sign in to
// its user at the end (for the check that an owner of an address is
// reachable).
func (e *faultEnv) passkeyReaches(l store.Login) bool {
	return e.pk.reach[l.LoginKey]
}

// pkUsed reports whether the faulted request's UseCeremony of kind
// committed.
func (e *faultEnv) pkUsed(kind store.CodeKind) bool {
	for _, c := range e.fs.Armed() {
		if c.Method == "UseCeremony" && c.Committed() && c.Args[0].(store.CodeKind) == kind {
			return true
		}
	}
	return false
}

// pkRequestRecovery asks for a recovery link outside any fault and
// returns its token, one of the run's secrets.
func (e *faultEnv) pkRequestRecovery(c *authtest.Client) string {
	e.t.Helper()
	before := len(e.srv.Mailbox.Messages())
	if a := e.pkSend(c, "/user/webauthn/reset/token", map[string]string{"email": e.email}); !a.ok() {
		e.t.Fatalf("recovery request without faults: %v", a)
	}
	if ev, ok := e.mailOutcome(); !ok || ev.Kind != auth.EventResetEmailSent || ev.Method != "webauthn" {
		e.t.Fatalf("recovery request without faults: outcome %+v", ev)
	}
	msgs := e.srv.Mailbox.WaitFor(e.t, before+1, faultRequestTimeout)
	_, tok := authtest.ResetLink(e.t, msgs[len(msgs)-1])
	e.secrets[tok] = true
	return tok
}

// faultPasskeyFlows are the flows of passkeys.
func faultPasskeyFlows() []faultFlow {
	config := func(linking bool) func(*auth.Config) {
		return func(cfg *auth.Config) {
			cfg.AppURL = pkApp
			cfg.Passkeys = passkeyRecipe
			cfg.AccountLinking = linking
			cfg.CheckSessionInStore = linking
		}
	}
	header := []authtest.Mode{authtest.Header}

	signUp := faultFlow{
		name:      "passkey-signup",
		modes:     faultModes,
		configure: config(false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.email = e.srv.NewEmail()
			e.pk.a = e.srv.NewAuthenticator()
			e.pk.opts = e.pkOptions(c, "/webauthn/options/register", map[string]string{"email": e.email})
			e.pk.cred = pkRegister(e.t, e.pk.a, e.pk.opts)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.pkSignUpWith(c, e.pk.opts, e.pk.cred)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			used, made := e.pkUsed(store.CodePasskeyOptions), e.committed("SignInUp")
			if a.ok() && (!used || !made || !e.committed("CreateSession")) {
				e.violation("a passkey sign-up answered OK, but committed the options' use %v, the user %v, a session %v", used, made, e.committed("CreateSession"))
			}
			// The browser posts again.
			r := e.pkSignUpWith(c, e.pk.opts, e.pk.cred)
			first := pkCredID(e.pk.a)
			switch {
			case used && r.ok():
				e.violation("a passkey sign-up's options answered twice: %v", r)
			case used && !r.is(http.StatusOK, "OPTIONS_NOT_FOUND_ERROR"):
				e.violation("the sign-up again after its options were used: %v, want OPTIONS_NOT_FOUND_ERROR", r)
			case !used && !r.ok():
				e.violation("the sign-up again after a failure before its options were used: %v, want OK", r)
			case used && !a.ok():
				// The person starts again, with new options.
				o := e.pkOptions(c, "/webauthn/options/register", map[string]string{"email": e.email})
				r = e.pkSignUpWith(c, o, pkRegister(e.t, e.pk.a, o))
				switch {
				case made && !r.is(http.StatusOK, "EMAIL_ALREADY_EXISTS_ERROR"):
					e.violation("a new sign-up after one that made its user and failed: %v, want EMAIL_ALREADY_EXISTS_ERROR", r)
				case made:
					e.finding("passkey sign-up failed after its user was made: the passkey signs in")
				case !r.ok():
					e.violation("a new sign-up after one that used its options and failed: %v, want OK", r)
				default:
					e.finding("passkey sign-up failed after its options were used: the browser starts again")
					first = pkCredID(e.pk.a)
				}
			}
			// One passkey user has the address, and the passkey that
			// made it signs in to it.
			var users []string
			for _, l := range loginsWithEmail(e.t, e.mem, e.email) {
				if l.Method == store.MethodWebAuthn {
					users = append(users, l.UserID)
				}
			}
			if len(users) != 1 {
				e.violation("%d passkey logins have %s after the sign-up, want 1", len(users), e.email)
				return
			}
			r = e.pkSignIn(e.srv.NewClient(authtest.Header), e.pk.a, authtest.WithCredential(pkDecode(first)))
			if !r.ok() || faultUserOf(r) != users[0] {
				e.violation("the passkey after the sign-up: %v, want a sign-in to user %s", r, users[0])
			}
		},
	}

	signIn := faultFlow{
		name:      "passkey-signin",
		modes:     faultModes,
		configure: config(false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.pkMustSignUp(e.srv.NewClient(authtest.Header))
			e.pk.opts = e.pkOptions(c, "/webauthn/options/signin", struct{}{})
			e.pk.cred = pkAssert(e.t, e.pk.a, e.pk.opts)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.pkSignInWith(c, e.pk.opts, e.pk.cred)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			used := e.pkUsed(store.CodePasskeyOptions)
			if a.ok() && (!used || !e.committed("CreateSession") || faultUserOf(a) != e.userID) {
				e.violation("a passkey sign-in answered OK (user %s), but committed the options' use %v, a session %v", faultUserOf(a), used, e.committed("CreateSession"))
			}
			r := e.pkSignInWith(c, e.pk.opts, e.pk.cred)
			switch {
			case used && r.ok():
				e.violation("an assertion signed in twice: %v", r)
			case used && !r.is(http.StatusOK, "INVALID_CREDENTIALS_ERROR"):
				e.violation("the assertion again after its options were used: %v, want INVALID_CREDENTIALS_ERROR", r)
			case !used && !r.ok():
				e.violation("the assertion again after a failure before its options were used: %v, want OK", r)
			case used && !a.ok():
				e.finding("passkey sign-in failed after its options were used: the browser starts again")
			}
			// The counter is the assertion's, whichever request took it.
			if got := pkStoredCounter(e, e.pk.a); got != 1 {
				e.violation("the stored counter after one accepted assertion is %d, want 1", got)
			}
			e.pkReaches("after the sign-in", e.pk.a, e.userID)
		},
	}

	// replay posts again an assertion of a synced passkey (whose counter
	// stays 0, so that only the options' single use stops a replay) that
	// signed in already: it must never sign in, whatever fails; nor with
	// new options.
	replay := faultFlow{
		name:      "passkey-replay",
		modes:     header,
		configure: config(false),
		status:    "INVALID_CREDENTIALS_ERROR",
		setup: func(e *faultEnv, c *authtest.Client) {
			e.email = e.srv.NewEmail()
			e.pk.a = e.srv.NewAuthenticator()
			e.pk.a.BackupEligible = true
			o := e.pkOptions(c, "/webauthn/options/register", map[string]string{"email": e.email})
			a := e.pkSignUpWith(e.srv.NewClient(authtest.Header), o, pkRegister(e.t, e.pk.a, o))
			if e.userID = faultUserOf(a); !a.ok() {
				e.t.Fatalf("setup: passkey sign-up: %v", a)
			}
			e.pk.opts = e.pkOptions(c, "/webauthn/options/signin", struct{}{})
			e.pk.cred = pkAssert(e.t, e.pk.a, e.pk.opts)
			if a := e.pkSignInWith(e.srv.NewClient(authtest.Header), e.pk.opts, e.pk.cred); !a.ok() {
				e.t.Fatalf("setup: passkey sign-in: %v", a)
			}
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.pkSignInWith(c, e.pk.opts, e.pk.cred)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if a.ok() || a.err == nil && a.res.IssuedTokens() || e.committed("CreateSession") || e.committed("UseCeremony") {
				e.violation("a replayed assertion signed in, or used something up: %v", a)
			}
			fresh := e.pkOptions(c, "/webauthn/options/signin", struct{}{})
			for _, o := range []pkOptions{e.pk.opts, fresh} {
				if r := e.pkSignInWith(c, o, e.pk.cred); !r.is(http.StatusOK, "INVALID_CREDENTIALS_ERROR") {
					e.violation("the replay again: %v, want INVALID_CREDENTIALS_ERROR", r)
				}
			}
			e.pkReaches("after the replay", e.pk.a, e.userID)
		},
	}

	// clone posts an assertion whose counter went back: it must never
	// sign in or change the stored passkey, whatever fails.
	clone := faultFlow{
		name:      "passkey-clone",
		modes:     header,
		configure: config(false),
		status:    "INVALID_CREDENTIALS_ERROR",
		setup: func(e *faultEnv, c *authtest.Client) {
			e.pkMustSignUp(e.srv.NewClient(authtest.Header))
			for range 2 {
				if a := e.pkSignIn(e.srv.NewClient(authtest.Header), e.pk.a); !a.ok() {
					e.t.Fatalf("setup: passkey sign-in: %v", a)
				}
			}
			l, _ := e.pkStored(e.pk.a)
			e.pk.material = l.Material
			e.pk.opts = e.pkOptions(c, "/webauthn/options/signin", struct{}{})
			e.pk.cred = pkAssert(e.t, e.pk.a, e.pk.opts, authtest.WithCounter(1))
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.pkSignInWith(c, e.pk.opts, e.pk.cred)
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			if a.ok() || a.err == nil && a.res.IssuedTokens() || e.committed("CreateSession") || e.committed("UseCeremony") {
				e.violation("a clone's assertion signed in, or used something up: %v", a)
			}
			if l, _ := e.pkStored(e.pk.a); string(l.Material) != string(e.pk.material) {
				e.violation("a clone's assertion changed the stored passkey")
			}
			if r := e.pkSignInWith(c, e.pk.opts, e.pk.cred); !r.is(http.StatusOK, "INVALID_CREDENTIALS_ERROR") {
				e.violation("the clone's assertion again: %v, want INVALID_CREDENTIALS_ERROR", r)
			}
			e.pkReaches("after the clone", e.pk.a, e.userID)
		},
	}

	// add registers a second passkey in a session.
	add := faultFlow{
		name:      "passkey-add",
		modes:     header,
		configure: config(false),
		setup: func(e *faultEnv, c *authtest.Client) {
			e.pkMustSignUp(c)
			e.pk.fresh = e.srv.NewAuthenticator()
			e.pk.opts = e.pkOptions(c, "/webauthn/options/register", map[string]string{"email": e.email})
			e.pk.cred = pkRegister(e.t, e.pk.fresh, e.pk.opts)
		},
		run: func(e *faultEnv, c *authtest.Client) faultAnswer {
			return e.pkSend(c, "/webauthn/credential", map[string]any{
				"webauthnGeneratedOptionsId": e.pk.opts.id, "recipeUserId": e.userID, "credential": json.RawMessage(e.pk.cred)})
		},
		after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
			used, linked := e.pkUsed(store.CodePasskeyOptions), e.committed("LinkLogin")
			if a.ok() && (!used || !linked) {
				e.violation("adding a passkey answered OK, but committed the options' use %v, the login %v", used, linked)
			}
			if _, stored := e.pkStored(e.pk.fresh); stored != linked {
				e.violation("the added passkey is stored: %v; LinkLogin committed: %v", stored, linked)
			}
			r := e.pkSend(c, "/webauthn/credential", map[string]any{
				"webauthnGeneratedOptionsId": e.pk.opts.id, "recipeUserId": e.userID, "credential": json.RawMessage(e.pk.cred)})
			switch {
			case used && r.ok():
				e.violation("options to add a passkey answered twice: %v", r)
			case used && !r.is(http.StatusOK, "OPTIONS_NOT_FOUND_ERROR"):
				e.violation("adding the passkey again after its options were used: %v, want OPTIONS_NOT_FOUND_ERROR", r)
			case !used && !r.ok():
				e.violation("adding the passkey again after a failure before its options were used: %v, want OK", r)
			case used && !linked:
				e.finding("adding a passkey failed after its options were used: the person starts again")
				o := e.pkOptions(c, "/webauthn/options/register", map[string]string{"email": e.email})
				if r := e.pkSend(c, "/webauthn/credential", map[string]any{
					"webauthnGeneratedOptionsId": o.id, "recipeUserId": e.userID, "credential": json.RawMessage(pkRegister(e.t, e.pk.fresh, o))}); !r.ok() {
					e.violation("adding a passkey with new options: %v, want OK", r)
				}
			}
			e.pkReaches("the added passkey", e.pk.fresh, e.userID)
			e.pkReaches("the first passkey", e.pk.a, e.userID)
		},
	}

	// recover registers a new passkey with a recovery link, for a user
	// with a session on each of two devices.
	recover := func(name string, linking bool) faultFlow {
		return faultFlow{
			name:      name,
			modes:     header,
			configure: config(linking),
			setup: func(e *faultEnv, c *authtest.Client) {
				first, second := e.srv.NewClient(authtest.Header), e.srv.NewClient(authtest.Cookie)
				e.pkMustSignUp(first)
				if a := e.pkSignIn(second, e.pk.a); !a.ok() {
					e.t.Fatalf("setup: passkey sign-in: %v", a)
				}
				e.ending = []*authtest.Client{first, second}
				e.pk.token = e.pkRequestRecovery(c)
				e.pk.fresh = e.srv.NewAuthenticator()
				e.pk.opts = e.pkOptions(c, "/webauthn/options/register", map[string]string{"recoverAccountToken": e.pk.token})
				e.pk.cred = pkRegister(e.t, e.pk.fresh, e.pk.opts)
			},
			run: func(e *faultEnv, c *authtest.Client) faultAnswer {
				return e.pkRecoverWith(c, e.pk.opts, e.pk.cred, e.pk.token)
			},
			after: func(e *faultEnv, c *authtest.Client, a faultAnswer) {
				optsUsed, tokUsed, linked := e.pkUsed(store.CodePasskeyOptions), e.pkUsed(store.CodePasskeyRecovery), e.committed("LinkLogin")
				if a.ok() && (!optsUsed || !tokUsed || !linked) {
					e.violation("a recovery answered OK, but committed the options' use %v, the link's %v, the new passkey %v", optsUsed, tokUsed, linked)
				}
				if a.ok() || linked && tokUsed {
					// The old passkey is gone once the link is used up,
					// which is the recovery's last step.
					if r := e.pkSignIn(e.srv.NewClient(authtest.Header), e.pk.a); !r.is(http.StatusOK, "INVALID_CREDENTIALS_ERROR") {
						e.violation("a recovery (%v) registered the new passkey, and the old one still signs in: %v", a, r)
					}
				}
				r := e.pkRecoverWith(c, e.pk.opts, e.pk.cred, e.pk.token)
				switch {
				case (optsUsed || tokUsed) && r.ok():
					e.violation("a recovery's options or link answered twice: %v", r)
				case tokUsed && !r.is(http.StatusOK, "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR"):
					e.violation("the recovery again after its link was used: %v, want RECOVER_ACCOUNT_TOKEN_INVALID_ERROR", r)
				case !tokUsed && optsUsed && !r.is(http.StatusOK, "OPTIONS_NOT_FOUND_ERROR"):
					e.violation("the recovery again after its options were used: %v, want OPTIONS_NOT_FOUND_ERROR", r)
				case !optsUsed && !r.ok():
					e.violation("the recovery again after a failure before anything was used: %v, want OK", r)
				case !a.ok() && !linked && optsUsed:
					// The person starts again: with the link if it still
					// works, or with a new one.
					tok := e.pk.token
					if tokUsed {
						e.finding("passkey recovery failed after its link was used and before the passkey was added: the person asks for another link")
						tok = e.pkRequestRecovery(e.srv.NewClient(authtest.Header))
					} else {
						e.finding("passkey recovery failed after its options were used: the page asks for new ones")
					}
					o := e.pkOptions(c, "/webauthn/options/register", map[string]string{"recoverAccountToken": tok})
					if r := e.pkRecoverWith(c, o, pkRegister(e.t, e.pk.fresh, o), tok); !r.ok() {
						e.violation("recovering with new options: %v, want OK", r)
					}
				case !a.ok() && linked:
					// The person cannot tell that the new passkey joined:
					// they recover again, with another device, and with
					// the same link if it still works (it is used up
					// last, so that a retry finishes the recovery).
					e.pk.fresh = e.srv.NewAuthenticator()
					tok := e.pk.token
					if tokUsed {
						e.finding("passkey recovery failed after its link was used: the person asks for another link")
						tok = e.pkRequestRecovery(e.srv.NewClient(authtest.Header))
					} else {
						e.finding("passkey recovery failed after the new passkey joined the user: the person retries with the link")
					}
					o := e.pkOptions(c, "/webauthn/options/register", map[string]string{"recoverAccountToken": tok})
					if r := e.pkRecoverWith(c, o, pkRegister(e.t, e.pk.fresh, o), tok); !r.ok() {
						e.violation("recovering again with a new link: %v, want OK", r)
					}
				}
				// The new passkey signs in, proves the address; the old
				// one, and every session from before, are gone.
				if l, ok := e.pkStored(e.pk.fresh); !ok || !l.EmailProven || !l.EmailVerified || l.UserID != e.userID {
					e.violation("the recovered passkey: %+v (stored %v), want %s proven and verified, of user %s", l, ok, e.email, e.userID)
				}
				e.pkReaches("the recovered passkey", e.pk.fresh, e.userID)
				if r := e.pkSignIn(e.srv.NewClient(authtest.Header), e.pk.a, authtest.WithCredential(e.pk.a.Credentials()[0].ID)); !r.is(http.StatusOK, "INVALID_CREDENTIALS_ERROR") {
					e.violation("the old passkey after the recovery: %v, want INVALID_CREDENTIALS_ERROR", r)
				}
				e.wantEnded("a recovery", false)
			},
		}
	}

	return []faultFlow{
		signUp,
		signIn,
		replay,
		clone,
		add,
		recover("passkey-recover", false),
		recover("passkey-recover-linking", true),
	}
}

// passkeyRecipe turns passkeys on for the sweep's servers: one for all,
// as an application has.
var passkeyRecipe = passkey.New(passkey.Config{})

// pkDecode decodes a credential id of the wire.
func pkDecode(id string) []byte {
	b, _ := base64.RawURLEncoding.DecodeString(id)
	return b
}

// pkStoredCounter is the sign counter of the newest passkey of a, as
// stored, or 0.
func pkStoredCounter(e *faultEnv, a *authtest.Authenticator) uint32 {
	l, ok := e.pkStored(a)
	if !ok {
		return 0
	}
	var m struct {
		Credential struct {
			Authenticator struct{ SignCount uint32 }
		}
	}
	json.Unmarshal(l.Material, &m)
	return m.Credential.Authenticator.SignCount
}

// faultPKStore is a store.Store whose UseCeremony does use instead while
// on is set.
type faultPKStore struct {
	store.Store
	on  *atomic.Bool
	use func(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error)
}

func (b *faultPKStore) UseCeremony(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
	if b.on.Load() && b.use != nil {
		return b.use(ctx, kind, hash, now, update)
	}
	return b.Store.UseCeremony(ctx, kind, hash, now, update)
}

// faultPKReusable is a UseCeremony that puts the code of kind back after
// using it: options or a link that answer again and again, from the
// start (the flows use theirs in setup).
func faultPKReusable(kind store.CodeKind) func(inner store.Store, on *atomic.Bool) store.Store {
	return func(inner store.Store, _ *atomic.Bool) store.Store {
		var codes []store.Code
		keeper := &faultPLKeeper{Store: inner, kept: &codes}
		b := &faultPKStore{Store: keeper, on: new(atomic.Bool)}
		b.on.Store(true) // from the start, to see the codes of setup
		b.use = func(ctx context.Context, k store.CodeKind, hash store.TokenHash, now time.Time, update *store.MaterialUpdate) (store.Code, error) {
			c, err := inner.UseCeremony(ctx, k, hash, now, update)
			if err == nil && k == kind {
				for _, kept := range codes {
					if kept.Hash == hash {
						inner.CreateCode(ctx, kept)
					}
				}
			}
			return c, err
		}
		return b
	}
}

// faultPKLoginCounter is a store.Store whose passkeys read with their
// counter at 0, as a store that lost it would have them.
type faultPKLoginCounter struct {
	store.Store
	on *atomic.Bool
}

func (b *faultPKLoginCounter) Login(ctx context.Context, k store.LoginKey) (store.Login, error) {
	l, err := b.Store.Login(ctx, k)
	if err != nil || !b.on.Load() || l.Method != store.MethodWebAuthn {
		return l, err
	}
	var m map[string]any
	if json.Unmarshal(l.Material, &m) == nil {
		if cred, ok := m["credential"].(map[string]any); ok {
			if au, ok := cred["authenticator"].(map[string]any); ok {
				au["signCount"] = 0
			}
		}
		l.Material, _ = json.Marshal(m)
	}
	return l, nil
}

// faultPasskeyBreakages are the deliberate breakages of the passkey
// flows.
func faultPasskeyBreakages() []faultBreakage {
	return []faultBreakage{
		{
			name: "passkey options that are not used up", flow: "passkey-replay",
			store: faultPKReusable(store.CodePasskeyOptions),
		},
		{
			name: "a recovery link that is not used up", flow: "passkey-recover-linking",
			store: faultPKReusable(store.CodePasskeyRecovery),
		},
		{
			// The library, changed to leave the counter as it was.
			name: "a passkey's new counter not recorded", flow: "passkey-signin",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				return &faultPKStore{Store: st, on: on,
					use: func(ctx context.Context, kind store.CodeKind, hash store.TokenHash, now time.Time, _ *store.MaterialUpdate) (store.Code, error) {
						return st.UseCeremony(ctx, kind, hash, now, nil)
					}}
			},
		},
		{
			name: "a store that loses a passkey's counter", flow: "passkey-clone",
			store: func(inner store.Store, on *atomic.Bool) store.Store {
				return &faultPKLoginCounter{Store: inner, on: on}
			},
		},
		{
			// The library, changed to keep the old passkeys at recovery.
			name: "a recovery that keeps the old passkey", flow: "passkey-recover-linking",
			handler: func(st store.Store, on *atomic.Bool) store.Store {
				b := &brokenStore{Store: st, on: on}
				b.deleteLogin = func(context.Context, string) ([]string, error) { return nil, nil }
				return b
			},
		},
	}
}
