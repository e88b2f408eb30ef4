package passkey

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// Timeout is how long a browser is asked to wait for the authenticator,
// as the options say it.
const Timeout = time.Minute

// The relying party's side of WebAuthn, on go-webauthn: the options a
// browser needs for a ceremony, and the checks of what the browser's
// authenticator answers. The recipe's handlers route, store and sign in;
// only this file knows go-webauthn.

// relyingParty is the WebAuthn relying party: its id, a host name that
// every origin's host is or ends with; its name, which authenticators
// show; and the origins the browser may run the ceremonies on.
type relyingParty struct {
	ID      string
	Name    string
	Origins []string
}

// passkeyUser is the account a passkey is registered for: its user
// handle (the WebAuthn user.id, at most 64 bytes) and the name
// authenticators show, the email.
type passkeyUser struct {
	Handle []byte
	Name   string
}

// A credential is a passkey as the verifier reports it.
type credential struct {
	CredentialID []byte
	UserHandle   []byte
	// Material is the credential as the verifier encodes it (public key,
	// counter, flags), stored with the login as it is.
	Material       []byte
	SignCount      uint32
	BackupEligible bool
	// CloneWarning reports a sign-in whose counter did not grow where
	// the authenticator keeps one: two copies of the key may exist.
	CloneWarning bool
}

// findFunc returns the Material of the stored passkey with a credential
// id and user handle, or an error.
type findFunc func(credentialID, userHandle []byte) ([]byte, error)

// The verifier's errors: the request is answered 400 for the first,
// INVALID_CREDENTIALS_ERROR for the second.
var (
	errMalformed = errors.New("passkey: the response is not a credential")
	errRefused   = errors.New("passkey: the response fails the checks")
)

// verifier checks WebAuthn ceremonies.
type verifier struct {
	mu      sync.Mutex
	parties map[string]*webauthn.WebAuthn // by relying party, built on first use
}

func newVerifier() *verifier {
	return &verifier{parties: map[string]*webauthn.WebAuthn{}}
}

// party returns the go-webauthn relying party of rp.
func (v *verifier) party(rp relyingParty) (*webauthn.WebAuthn, error) {
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

// BeginRegistration returns the options of a registration ceremony for
// user, excluding the credentials in exclude, as the JSON object of
// WebAuthn's PublicKeyCredentialCreationOptionsJSON, and the ceremony's
// state, to keep until it ends.
func (v *verifier) BeginRegistration(rp relyingParty, user passkeyUser, exclude [][]byte) (options, state []byte, err error) {
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

// FinishRegistration checks a RegistrationResponseJSON against the
// ceremony's state and returns the new passkey. Its error wraps
// errMalformed for a response that is not a credential, and errRefused
// for one that fails a check.
func (v *verifier) FinishRegistration(rp relyingParty, user passkeyUser, state, response []byte) (credential, error) {
	w, session, err := v.resume(rp, state)
	if err != nil {
		return credential{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return credential{}, malformed(err)
	}
	cred, err := w.CreateCredential(account{user: user}, session, parsed)
	if err != nil {
		return credential{}, refused(err)
	}
	return credentialOf(cred, user.Handle)
}

// resume returns the relying party and the state of a ceremony that a
// Begin method started.
func (v *verifier) resume(rp relyingParty, state []byte) (*webauthn.WebAuthn, webauthn.SessionData, error) {
	var session webauthn.SessionData
	w, err := v.party(rp)
	if err == nil {
		if err = json.Unmarshal(state, &session); err != nil {
			err = fmt.Errorf("passkey: ceremony state: %w", err)
		}
	}
	return w, session, err
}

// BeginSignIn returns the options of a sign-in ceremony with a
// discoverable credential (PublicKeyCredentialRequestOptionsJSON) and its
// state.
func (v *verifier) BeginSignIn(rp relyingParty) (options, state []byte, err error) {
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

// FinishSignIn checks an AuthenticationResponseJSON against the
// ceremony's state, with the stored passkey that find returns for the
// credential id and user handle the response names, and returns the
// passkey as updated by the sign-in (its counter), with CloneWarning set
// if the counter did not grow. Errors as for FinishRegistration; an error
// of find is returned as it is.
func (v *verifier) FinishSignIn(rp relyingParty, state, response []byte, find findFunc) (credential, error) {
	w, session, err := v.resume(rp, state)
	if err != nil {
		return credential{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return credential{}, malformed(err)
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
		return account{user: passkeyUser{Handle: m.Handle}, creds: []webauthn.Credential{m.Credential}}, nil
	}
	_, cred, err := w.ValidatePasskeyLogin(handler, session, parsed)
	if findErr != nil {
		return credential{}, findErr
	}
	if err != nil {
		return credential{}, refused(err)
	}
	p, err := credentialOf(cred, parsed.Response.UserHandle)
	if err != nil {
		return credential{}, err
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

func credentialOf(cred *webauthn.Credential, handle []byte) (credential, error) {
	stored := *cred
	stored.Authenticator.CloneWarning = false
	// The attestation is kept by go-webauthn for metadata checks this
	// package does not make; without it a credential is a few hundred
	// bytes.
	stored.Attestation = webauthn.CredentialAttestation{}
	b, err := json.Marshal(material{Handle: handle, Credential: stored})
	if err != nil {
		return credential{}, fmt.Errorf("passkey: %w", err)
	}
	return credential{
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
	return fmt.Errorf("%w: %s", errMalformed, detail(err))
}

// refused reports a credential that does not pass the checks.
func refused(err error) error {
	return fmt.Errorf("%w: %s", errRefused, detail(err))
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
	user  passkeyUser
	creds []webauthn.Credential
}

func (a account) WebAuthnID() []byte                         { return a.user.Handle }
func (a account) WebAuthnName() string                       { return a.user.Name }
func (a account) WebAuthnDisplayName() string                { return a.user.Name }
func (a account) WebAuthnCredentials() []webauthn.Credential { return a.creds }
