// Package passkey checks WebAuthn ceremonies for passkey sign-in, on
// github.com/go-webauthn/webauthn. Give New's Verifier to
// auth.Config.Passkeys; the auth package serves the SuperTokens WebAuthn
// recipe's endpoints and keeps the credentials, and calls this package for
// the ceremonies' options and checks. It lives apart so that applications
// without passkeys do not build go-webauthn and its dependencies.
//
// The options follow the SuperTokens backends, which the frontend SDKs
// expect: discoverable credentials (resident keys required), user
// verification preferred, no attestation, and the algorithms EdDSA, ES256
// and RS256.
package passkey

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/latchkit/auth"
)

// Timeout is how long a browser is asked to wait for the authenticator,
// as the options say it.
const Timeout = time.Minute

// Verifier checks WebAuthn ceremonies. It implements
// auth.PasskeyVerifier; the zero value is not usable, call New.
type Verifier struct {
	mu      sync.Mutex
	parties map[string]*webauthn.WebAuthn // by relying party, built on first use
}

var _ auth.PasskeyVerifier = (*Verifier)(nil)

// New returns a Verifier.
func New() *Verifier {
	return &Verifier{parties: map[string]*webauthn.WebAuthn{}}
}

// party returns the go-webauthn relying party of rp.
func (v *Verifier) party(rp auth.RelyingParty) (*webauthn.WebAuthn, error) {
	key := fmt.Sprintf("%q %q %q", rp.ID, rp.Name, rp.Origins)
	v.mu.Lock()
	defer v.mu.Unlock()
	if w, ok := v.parties[key]; ok {
		return w, nil
	}
	w, err := webauthn.New(&webauthn.Config{
		RPID:                  rp.ID,
		RPDisplayName:         rp.Name,
		RPOrigins:             rp.Origins,
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification:   protocol.VerificationPreferred,
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: Timeout, TimeoutUVD: Timeout},
			Registration: webauthn.TimeoutConfig{Timeout: Timeout, TimeoutUVD: Timeout},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("passkey: relying party %q: %w", rp.ID, err)
	}
	v.parties[key] = w
	return w, nil
}

// The algorithms offered, in the SuperTokens backends' order.
var algorithms = []protocol.CredentialParameter{
	{Type: protocol.PublicKeyCredentialType, Algorithm: -8},   // EdDSA
	{Type: protocol.PublicKeyCredentialType, Algorithm: -7},   // ES256
	{Type: protocol.PublicKeyCredentialType, Algorithm: -257}, // RS256
}

// BeginRegistration implements auth.PasskeyVerifier.
func (v *Verifier) BeginRegistration(rp auth.RelyingParty, user auth.PasskeyUser, exclude [][]byte) (options, state []byte, err error) {
	w, err := v.party(rp)
	if err != nil {
		return nil, nil, err
	}
	var excluded []protocol.CredentialDescriptor
	for _, id := range exclude {
		excluded = append(excluded, protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: id})
	}
	creation, session, err := w.BeginRegistration(account{user: user},
		webauthn.WithCredentialParameters(algorithms), webauthn.WithExclusions(excluded))
	if err != nil {
		return nil, nil, fmt.Errorf("passkey: %w", err)
	}
	// The SDKs hand the answer to @simplewebauthn/browser as it is: the
	// options' members at the top level, not under "publicKey", and
	// excludeCredentials always there, as the SDKs' types declare it
	// (go-webauthn leaves an empty list out).
	options, state, err = marshalPair(creation.Response, session)
	if err != nil || len(creation.Response.CredentialExcludeList) > 0 {
		return options, state, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(options, &members); err != nil {
		return nil, nil, fmt.Errorf("passkey: %w", err)
	}
	members["excludeCredentials"] = json.RawMessage("[]")
	options, err = json.Marshal(members)
	return options, state, err
}

// FinishRegistration implements auth.PasskeyVerifier.
func (v *Verifier) FinishRegistration(rp auth.RelyingParty, user auth.PasskeyUser, state, response []byte) (auth.Passkey, error) {
	w, session, err := v.resume(rp, state)
	if err != nil {
		return auth.Passkey{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return auth.Passkey{}, malformed(err)
	}
	cred, err := w.CreateCredential(account{user: user}, session, parsed)
	if err != nil {
		return auth.Passkey{}, refused(err)
	}
	return passkeyOf(cred, user.Handle)
}

// resume returns the relying party and the state of a ceremony that a
// Begin method started.
func (v *Verifier) resume(rp auth.RelyingParty, state []byte) (*webauthn.WebAuthn, webauthn.SessionData, error) {
	var session webauthn.SessionData
	w, err := v.party(rp)
	if err == nil {
		if err = json.Unmarshal(state, &session); err != nil {
			err = fmt.Errorf("passkey: ceremony state: %w", err)
		}
	}
	return w, session, err
}

// BeginSignIn implements auth.PasskeyVerifier.
func (v *Verifier) BeginSignIn(rp auth.RelyingParty) (options, state []byte, err error) {
	w, err := v.party(rp)
	if err != nil {
		return nil, nil, err
	}
	assertion, session, err := w.BeginDiscoverableLogin()
	if err != nil {
		return nil, nil, fmt.Errorf("passkey: %w", err)
	}
	return marshalPair(assertion.Response, session)
}

// FinishSignIn implements auth.PasskeyVerifier.
func (v *Verifier) FinishSignIn(rp auth.RelyingParty, state, response []byte, find auth.FindPasskey) (auth.Passkey, error) {
	w, session, err := v.resume(rp, state)
	if err != nil {
		return auth.Passkey{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return auth.Passkey{}, malformed(err)
	}
	var findErr error
	handler := func(rawID, userHandle []byte) (webauthn.User, error) {
		stored, err := find(rawID, userHandle)
		if err != nil {
			findErr = err
			return nil, err
		}
		var m material
		if err := json.Unmarshal(stored, &m); err != nil {
			findErr = fmt.Errorf("passkey: stored credential: %w", err)
			return nil, findErr
		}
		return account{user: auth.PasskeyUser{Handle: m.Handle}, creds: []webauthn.Credential{m.Credential}}, nil
	}
	_, cred, err := w.ValidatePasskeyLogin(handler, session, parsed)
	if findErr != nil {
		return auth.Passkey{}, findErr
	}
	if err != nil {
		return auth.Passkey{}, refused(err)
	}
	p, err := passkeyOf(cred, parsed.Response.UserHandle)
	if err != nil {
		return auth.Passkey{}, err
	}
	// go-webauthn leaves the counter as it was when the authenticator's
	// did not grow; the caller refuses such a sign-in, and stores nothing.
	p.CloneWarning = cred.Authenticator.CloneWarning
	return p, nil
}

// material is what a passkey's login keeps: the credential as go-webauthn
// records it, and the user handle it was registered under.
type material struct {
	Handle     []byte              `json:"handle"`
	Credential webauthn.Credential `json:"credential"`
}

func passkeyOf(cred *webauthn.Credential, handle []byte) (auth.Passkey, error) {
	stored := *cred
	stored.Authenticator.CloneWarning = false
	// The attestation is kept by go-webauthn for metadata checks this
	// package does not make; without it a credential is a few hundred
	// bytes.
	stored.Attestation = webauthn.CredentialAttestation{}
	b, err := json.Marshal(material{Handle: handle, Credential: stored})
	if err != nil {
		return auth.Passkey{}, fmt.Errorf("passkey: %w", err)
	}
	return auth.Passkey{
		CredentialID:   cred.ID,
		UserHandle:     handle,
		Material:       b,
		SignCount:      cred.Authenticator.SignCount,
		BackupEligible: cred.Flags.BackupEligible,
	}, nil
}

func marshalPair(options any, session *webauthn.SessionData) ([]byte, []byte, error) {
	o, err := json.Marshal(options)
	if err != nil {
		return nil, nil, fmt.Errorf("passkey: %w", err)
	}
	s, err := json.Marshal(session)
	if err != nil {
		return nil, nil, fmt.Errorf("passkey: %w", err)
	}
	return o, s, nil
}

// malformed reports a response that is not a credential at all.
func malformed(err error) error {
	return fmt.Errorf("%w: %s", auth.ErrPasskeyMalformed, detail(err))
}

// refused reports a credential that does not pass the checks.
func refused(err error) error {
	return fmt.Errorf("%w: %s", auth.ErrPasskeyRefused, detail(err))
}

// detail is an error's text without what the browser sent: go-webauthn's
// protocol errors carry a developer-facing detail, which names the check
// that failed.
func detail(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Type + ": " + pe.Details
	}
	return err.Error()
}

// account is a user as go-webauthn sees one.
type account struct {
	user  auth.PasskeyUser
	creds []webauthn.Credential
}

func (a account) WebAuthnID() []byte                         { return a.user.Handle }
func (a account) WebAuthnName() string                       { return a.user.Name }
func (a account) WebAuthnDisplayName() string                { return a.user.Name }
func (a account) WebAuthnCredentials() []webauthn.Credential { return a.creds }
