package authtest_test

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passkey"
)

// The Authenticator's responses are checked by go-webauthn, a relying
// party implementation that shares no code with it.

const (
	testRPID   = "example.com"
	testOrigin = "https://app.example.com"
)

// rp is a go-webauthn relying party with its users.
type rp struct {
	t     *testing.T
	w     *webauthn.WebAuthn
	users []*rpUser
}

type rpUser struct {
	id    []byte
	name  string
	creds []webauthn.Credential
}

func (u *rpUser) WebAuthnID() []byte                         { return u.id }
func (u *rpUser) WebAuthnName() string                       { return u.name }
func (u *rpUser) WebAuthnDisplayName() string                { return u.name }
func (u *rpUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

func newRP(t *testing.T) *rp {
	t.Helper()
	w, err := webauthn.New(&webauthn.Config{RPID: testRPID, RPDisplayName: "Example", RPOrigins: []string{testOrigin}})
	if err != nil {
		t.Fatal(err)
	}
	return &rp{t: t, w: w}
}

func (r *rp) newUser(name string) *rpUser {
	u := &rpUser{id: []byte(fmt.Sprintf("user-%d", len(r.users)+1)), name: name}
	r.users = append(r.users, u)
	return u
}

// beginRegistration returns the options JSON for u, as go-webauthn
// encodes them: under "publicKey".
func (r *rp) beginRegistration(u *rpUser, opts ...webauthn.RegistrationOption) ([]byte, *webauthn.SessionData) {
	r.t.Helper()
	opts = append([]webauthn.RegistrationOption{webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired)}, opts...)
	creation, sess, err := r.w.BeginRegistration(u, opts...)
	if err != nil {
		r.t.Fatal(err)
	}
	b, _ := json.Marshal(creation)
	return b, sess
}

// finishRegistration verifies a registration response and gives u the
// credential.
func (r *rp) finishRegistration(u *rpUser, sess *webauthn.SessionData, resp []byte) (*webauthn.Credential, error) {
	parsed, err := protocol.ParseCredentialCreationResponseBytes(resp)
	if err != nil {
		return nil, err
	}
	c, err := r.w.CreateCredential(u, *sess, parsed)
	if err != nil {
		return nil, err
	}
	u.creds = append(u.creds, *c)
	return c, nil
}

// register runs a registration of a new user that must succeed.
func (r *rp) register(a *authtest.Authenticator, name string) (*rpUser, *webauthn.Credential) {
	r.t.Helper()
	u := r.newUser(name)
	opts, sess := r.beginRegistration(u)
	resp, err := a.Register(opts)
	if err != nil {
		r.t.Fatalf("Register: %v", err)
	}
	c, err := r.finishRegistration(u, sess, resp)
	if err != nil {
		r.t.Fatalf("go-webauthn refuses the registration: %v\n%s", err, resp)
	}
	return u, c
}

func (r *rp) beginLogin(opts ...webauthn.LoginOption) ([]byte, *webauthn.SessionData) {
	r.t.Helper()
	assertion, sess, err := r.w.BeginDiscoverableLogin(opts...)
	if err != nil {
		r.t.Fatal(err)
	}
	b, _ := json.Marshal(assertion)
	return b, sess
}

// finishLogin verifies an assertion as a discoverable login and, if it
// passes, stores the credential's new state.
func (r *rp) finishLogin(sess *webauthn.SessionData, resp []byte) (*rpUser, *webauthn.Credential, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(resp)
	if err != nil {
		return nil, nil, err
	}
	var found *rpUser
	_, c, err := r.w.ValidatePasskeyLogin(func(rawID, userHandle []byte) (webauthn.User, error) {
		for _, u := range r.users {
			if bytes.Equal(u.id, userHandle) {
				found = u
				return u, nil
			}
		}
		return nil, errors.New("no such user")
	}, *sess, parsed)
	if err != nil {
		return nil, nil, err
	}
	for i := range found.creds {
		if bytes.Equal(found.creds[i].ID, c.ID) {
			found.creds[i] = *c
		}
	}
	return found, c, nil
}

// login runs a discoverable login that go-webauthn must accept.
func (r *rp) login(a *authtest.Authenticator, opts ...authtest.CeremonyOption) (*rpUser, *webauthn.Credential) {
	r.t.Helper()
	o, sess := r.beginLogin()
	resp, err := a.Assert(o, opts...)
	if err != nil {
		r.t.Fatalf("Assert: %v", err)
	}
	u, c, err := r.finishLogin(sess, resp)
	if err != nil {
		r.t.Fatalf("go-webauthn refuses the assertion: %v\n%s", err, resp)
	}
	return u, c
}

// refused runs a login with opts that go-webauthn must refuse.
func (r *rp) refused(a *authtest.Authenticator, what string, opts ...authtest.CeremonyOption) {
	r.t.Helper()
	o, sess := r.beginLogin()
	resp, err := a.Assert(o, opts...)
	if err != nil {
		r.t.Fatalf("%s: Assert: %v", what, err)
	}
	if _, _, err := r.finishLogin(sess, resp); err == nil {
		r.t.Errorf("%s: go-webauthn accepts the assertion", what)
	}
}

func TestAuthenticatorRegisterAndSignIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		alg  int
	}{{"ES256", authtest.ES256}, {"EdDSA", authtest.EdDSA}, {"default", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRP(t)
			a := authtest.NewAuthenticator(testOrigin)
			a.Algorithm = tc.alg
			u := r.newUser("ada@example.com")
			opts, sess := r.beginRegistration(u, webauthn.WithCredentialParameters([]protocol.CredentialParameter{
				{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgEdDSA},
				{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgES256},
			}))
			resp, err := a.Register(opts)
			if err != nil {
				t.Fatal(err)
			}
			c, err := r.finishRegistration(u, sess, resp)
			if err != nil {
				t.Fatalf("go-webauthn refuses the registration: %v\n%s", err, resp)
			}

			held := a.Credentials()
			if len(held) != 1 {
				t.Fatalf("Credentials() = %d credentials, want 1", len(held))
			}
			h := held[0]
			want := tc.alg
			if want == 0 {
				want = authtest.ES256
			}
			if !bytes.Equal(h.ID, c.ID) || h.RPID != testRPID || !bytes.Equal(h.UserHandle, u.id) ||
				h.UserName != u.name || h.Counter != 0 || h.Algorithm != want || h.BackupEligible {
				t.Errorf("Credentials()[0] = %+v; go-webauthn's credential ID %x, user %q", h, c.ID, u.id)
			}
			if c.AttestationFormat != "none" || !slices.Equal(c.Transport, []protocol.AuthenticatorTransport{protocol.Internal}) ||
				!c.Flags.UserPresent || !c.Flags.UserVerified || c.Flags.BackupEligible || c.Flags.BackupState ||
				c.Authenticator.SignCount != 0 || c.Authenticator.Attachment != protocol.Platform {
				t.Errorf("go-webauthn's credential: %+v", c)
			}
			pub, err := webauthncose.ParsePublicKey(c.PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			switch k := pub.(type) {
			case webauthncose.EC2PublicKeyData:
				ek, err := k.ToECDSA()
				if err != nil || want != authtest.ES256 || !ek.Equal(h.PublicKey) {
					t.Errorf("COSE key %+v (%v), want the %T of Credentials()", k, err, h.PublicKey)
				}
			case webauthncose.OKPPublicKeyData:
				if want != authtest.EdDSA || !bytes.Equal(k.XCoord, h.PublicKey.(ed25519.PublicKey)) {
					t.Errorf("COSE key %+v, want the %T of Credentials()", k, h.PublicKey)
				}
			default:
				t.Errorf("COSE key %T", pub)
			}

			// "publicKey" and "publicKeyAlgorithm", which SDKs read instead
			// of the COSE key, say the same.
			var body struct {
				Response struct {
					PublicKey          string `json:"publicKey"`
					PublicKeyAlgorithm int    `json:"publicKeyAlgorithm"`
					AuthenticatorData  string `json:"authenticatorData"`
				} `json:"response"`
			}
			if err := json.Unmarshal(resp, &body); err != nil {
				t.Fatal(err)
			}
			authData := decode(t, body.Response.AuthenticatorData)
			canonical(t, "COSE key", authData[37+16+2+len(c.ID):], func() any { return &map[int]any{} })
			der, _ := base64.RawURLEncoding.DecodeString(body.Response.PublicKey)
			spki, err := x509.ParsePKIXPublicKey(der)
			if err != nil || !spki.(interface{ Equal(crypto.PublicKey) bool }).Equal(h.PublicKey) || body.Response.PublicKeyAlgorithm != want {
				t.Errorf("publicKey %v (%v), publicKeyAlgorithm %d", spki, err, body.Response.PublicKeyAlgorithm)
			}

			for i := uint32(1); i <= 3; i++ {
				got, c := r.login(a)
				if got != u || c.Authenticator.SignCount != i || c.Authenticator.CloneWarning || !c.Flags.UserVerified {
					t.Errorf("sign-in %d: user %q, credential %+v", i, got.id, c)
				}
				if n := a.Credentials()[0].Counter; n != i {
					t.Errorf("sign-in %d: Credentials()[0].Counter = %d", i, n)
				}
			}
		})
	}
}

// The options as the SuperTokens frontend SDK receives them: at the top
// level of the answer, beside status and webauthnGeneratedOptionsId.
func TestAuthenticatorSuperTokensOptions(t *testing.T) {
	r := newRP(t)
	a := authtest.NewAuthenticator(testOrigin)
	u := r.newUser("ada@example.com")
	creation, sess, err := r.w.BeginRegistration(u,
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired),
		webauthn.WithCredentialParameters([]protocol.CredentialParameter{
			{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgEdDSA},
			{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgES256},
			{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgRS256},
		}))
	if err != nil {
		t.Fatal(err)
	}
	opts := flatten(t, creation.Response)
	resp, err := a.Register(opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.finishRegistration(u, sess, resp)
	if err != nil {
		t.Fatalf("go-webauthn refuses the registration: %v\n%s", err, resp)
	}

	// The JSON that @simplewebauthn/browser makes.
	var reg struct {
		ID, RawID, Type         string
		AuthenticatorAttachment string
		ClientExtensionResults  map[string]any
		Response                struct {
			ClientDataJSON, AttestationObject, PublicKey, AuthenticatorData string
			Transports                                                      []string
			PublicKeyAlgorithm                                              int
		}
	}
	if err := json.Unmarshal(resp, &reg); err != nil {
		t.Fatal(err)
	}
	id := base64.RawURLEncoding.EncodeToString(c.ID)
	if reg.ID != id || reg.RawID != id || reg.Type != "public-key" || reg.AuthenticatorAttachment != "platform" ||
		reg.ClientExtensionResults == nil || len(reg.ClientExtensionResults) != 0 ||
		!slices.Equal(reg.Response.Transports, []string{"internal"}) || reg.Response.PublicKeyAlgorithm != -7 {
		t.Errorf("registration JSON: %s", resp)
	}
	if got := a.Credentials()[0].EncodedID(); got != id {
		t.Errorf("EncodedID() = %q, want %q", got, id)
	}
	cd := decode(t, reg.Response.ClientDataJSON)
	wantCD := fmt.Sprintf(`{"type":"webauthn.create","challenge":%q,"origin":%q,"crossOrigin":false}`, creation.Response.Challenge, testOrigin)
	if string(cd) != wantCD {
		t.Errorf("clientDataJSON = %s\nwant             %s", cd, wantCD)
	}

	// The CBOR is in CTAP2 canonical form: go-webauthn's encoder, which
	// sorts keys that way, makes the same bytes from what it decodes.
	attObj := decode(t, reg.Response.AttestationObject)
	var att struct {
		Fmt      string         `cbor:"fmt"`
		AttStmt  map[string]any `cbor:"attStmt"`
		AuthData []byte         `cbor:"authData"`
	}
	if err := webauthncbor.Unmarshal(attObj, &att); err != nil {
		t.Fatal(err)
	}
	if att.Fmt != "none" || len(att.AttStmt) != 0 || !bytes.Equal(att.AuthData, decode(t, reg.Response.AuthenticatorData)) {
		t.Errorf("attestation object %+v", att)
	}
	canonical(t, "attestation object", attObj, func() any { return &map[string]any{} })
	// The key as written, not c.PublicKey, which go-webauthn re-encodes.
	rawKey := att.AuthData[37+16+2+len(c.ID):]
	canonical(t, "COSE key", rawKey, func() any { return &map[int]any{} })
	if len(att.AuthData) != 37+16+2+32+len(c.PublicKey) || att.AuthData[32] != 0x45 { // UP, UV, AT
		t.Errorf("authData (%d bytes, flags %#x) %x", len(att.AuthData), att.AuthData[32], att.AuthData)
	}

	// Sign-in options as SuperTokens sends them: rpId, challenge, timeout,
	// userVerification at the top level, no allowCredentials.
	assertion, lsess, err := r.w.BeginDiscoverableLogin()
	if err != nil {
		t.Fatal(err)
	}
	resp, err = a.Assert(flatten(t, assertion.Response))
	if err != nil {
		t.Fatal(err)
	}
	got, lc, err := r.finishLogin(lsess, resp)
	if err != nil || got != u || lc.Authenticator.SignCount != 1 {
		t.Fatalf("go-webauthn: %v, user %v, credential %+v\n%s", err, got, lc, resp)
	}
	var signIn struct {
		ID, RawID, Type         string
		AuthenticatorAttachment string
		ClientExtensionResults  map[string]any
		Response                struct {
			ClientDataJSON, AuthenticatorData, Signature, UserHandle string
		}
	}
	if err := json.Unmarshal(resp, &signIn); err != nil {
		t.Fatal(err)
	}
	if signIn.ID != id || signIn.RawID != id || signIn.Type != "public-key" || signIn.AuthenticatorAttachment != "platform" ||
		signIn.ClientExtensionResults == nil || signIn.Response.UserHandle != base64.RawURLEncoding.EncodeToString(u.id) {
		t.Errorf("authentication JSON: %s", resp)
	}
	cd = decode(t, signIn.Response.ClientDataJSON)
	wantCD = fmt.Sprintf(`{"type":"webauthn.get","challenge":%q,"origin":%q,"crossOrigin":false}`, assertion.Response.Challenge, testOrigin)
	if string(cd) != wantCD {
		t.Errorf("clientDataJSON = %s\nwant             %s", cd, wantCD)
	}
	if ad := decode(t, signIn.Response.AuthenticatorData); len(ad) != 37 || ad[32] != 0x05 || !bytes.Equal(ad[33:], []byte{0, 0, 0, 1}) {
		t.Errorf("authenticatorData %x", ad)
	}
}

// flatten returns options as the top-level members of an answer with a
// status and an options ID, as SuperTokens sends them.
func flatten(t *testing.T, options any) []byte {
	t.Helper()
	b, err := json.Marshal(options)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["status"] = "OK"
	m["webauthnGeneratedOptionsId"] = "4d7b7d0c-2bd1-4a1b-9d55-8a4f4c5e7b10"
	m["createdAt"], m["expiresAt"] = 1, 60001
	b, _ = json.Marshal(m)
	return b
}

func decode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("%q is not unpadded base64url: %v", s, err)
	}
	return b
}

// canonical checks that go-webauthn's CTAP2 encoder writes what it
// decodes from b as b again.
func canonical(t *testing.T, what string, b []byte, v func() any) {
	t.Helper()
	x := v()
	if err := webauthncbor.Unmarshal(b, x); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	again, err := webauthncbor.Marshal(x)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("%s is not canonical CBOR:\n%x\nre-encoded:\n%x (%v)", what, b, again, err)
	}
}

func TestAuthenticatorCounter(t *testing.T) {
	r := newRP(t)
	a := authtest.NewAuthenticator(testOrigin)
	_, reg := r.register(a, "ada@example.com")
	id := reg.ID
	for i := uint32(1); i <= 2; i++ {
		if _, c := r.login(a); c.Authenticator.SignCount != i || c.Authenticator.CloneWarning {
			t.Fatalf("sign-in %d: %+v", i, c.Authenticator)
		}
	}

	// One assertion with an old counter, as a clone's: go-webauthn warns,
	// and the authenticator's own counter goes on from 2.
	_, c := r.login(a, authtest.WithCounter(1))
	if !c.Authenticator.CloneWarning {
		t.Errorf("counter 1 after 2: no CloneWarning: %+v", c.Authenticator)
	}
	r.users[0].creds[0].Authenticator = webauthn.Authenticator{SignCount: 2, AAGUID: c.Authenticator.AAGUID}
	if _, c := r.login(a); c.Authenticator.SignCount != 3 || c.Authenticator.CloneWarning {
		t.Errorf("after WithCounter(1): %+v, want counter 3 and no warning", c.Authenticator)
	}
	if n := a.Credentials()[0].Counter; n != 3 {
		t.Errorf("Counter = %d, want 3", n)
	}

	// The counter set back, as a restored backup's.
	if err := a.SetCounter(id, 1); err != nil {
		t.Fatal(err)
	}
	if _, c := r.login(a); !c.Authenticator.CloneWarning {
		t.Errorf("counter 2 after 3: no CloneWarning: %+v", c.Authenticator)
	}
	if n := a.Credentials()[0].Counter; n != 2 {
		t.Errorf("Counter after SetCounter(1) and a sign-in = %d, want 2", n)
	}
	if err := a.SetCounter([]byte("not held"), 1); !errors.Is(err, authtest.ErrNoCredential) {
		t.Errorf("SetCounter of an unknown credential: %v", err)
	}
}

func TestAuthenticatorBackupEligible(t *testing.T) {
	r := newRP(t)
	a := authtest.NewAuthenticator(testOrigin)
	a.BackupEligible = true
	_, reg := r.register(a, "ada@example.com")
	if !reg.Flags.BackupEligible || !reg.Flags.BackupState {
		t.Errorf("registration flags %+v, want BE and BS", reg.Flags)
	}
	if !a.Credentials()[0].BackupEligible {
		t.Errorf("Credentials()[0].BackupEligible is false")
	}
	for i := range 3 {
		_, c := r.login(a)
		if c.Authenticator.SignCount != 0 || c.Authenticator.CloneWarning || !c.Flags.BackupEligible || !c.Flags.BackupState {
			t.Errorf("sign-in %d: %+v %+v, want counter 0, no warning, BE and BS", i+1, c.Authenticator, c.Flags)
		}
	}

	// The flag belongs to the credential: turning it off later makes new
	// credentials device-bound and leaves this one synced.
	a.BackupEligible = false
	r.login(a)
	_, reg2 := r.register(a, "bob@example.com")
	if reg2.Flags.BackupEligible {
		t.Errorf("second credential is backup eligible")
	}
	if _, c := r.login(a); c.Authenticator.SignCount != 1 || c.Flags.BackupEligible {
		t.Errorf("device-bound credential: %+v %+v", c.Authenticator, c.Flags)
	}
}

func TestAuthenticatorRefused(t *testing.T) {
	r := newRP(t)
	a := authtest.NewAuthenticator(testOrigin)
	r.register(a, "ada@example.com")

	r.refused(a, "another origin", authtest.WithOrigin("https://evil.example"))
	r.refused(a, "another RP ID", authtest.WithRPID("evil.example"))
	a.NoUserVerification = true
	o, sess := r.beginLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if resp, err := a.Assert(o); err != nil {
		t.Fatal(err)
	} else if _, _, err := r.finishLogin(sess, resp); err == nil {
		t.Errorf("no user verification, which the RP requires: go-webauthn accepts")
	}
	a.NoUserVerification = false

	// A replay, of the last assertion, against a new challenge and against
	// its own.
	o, sess = r.beginLogin()
	first, err := a.Assert(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.finishLogin(sess, first); err != nil {
		t.Fatal(err)
	}
	again, err := a.Assert(nil, authtest.Replay())
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("Replay: %v\n%s\nwant\n%s", err, again, first)
	}
	o, sess2 := r.beginLogin()
	if again, _ = a.Assert(o, authtest.Replay()); !bytes.Equal(again, first) {
		t.Fatalf("Replay with options: %s", again)
	}
	if _, _, err := r.finishLogin(sess2, again); err == nil {
		t.Errorf("a replay against a new challenge: go-webauthn accepts")
	}
	if _, c, err := r.finishLogin(sess, again); err == nil && !c.Authenticator.CloneWarning {
		t.Errorf("a replay against its own challenge: go-webauthn accepts, with no CloneWarning")
	}

	// Next changes the next ceremony, and only that one.
	a.Next(authtest.WithOrigin("https://evil.example"))
	r.refused(a, "Next(WithOrigin)")
	r.login(a)

	// Registrations from another origin or for another RP ID.
	for _, tc := range []struct {
		name string
		opt  authtest.CeremonyOption
	}{
		{"another origin", authtest.WithOrigin("https://evil.example")},
		{"another RP ID", authtest.WithRPID("evil.example")},
	} {
		u := r.newUser(tc.name)
		opts, sess := r.beginRegistration(u)
		resp, err := a.Register(opts, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.finishRegistration(u, sess, resp); err == nil {
			t.Errorf("registration from %s: go-webauthn accepts", tc.name)
		}
	}
}

func TestAuthenticatorChoosesCredential(t *testing.T) {
	r := newRP(t)
	a := authtest.NewAuthenticator(testOrigin)
	ada, adaCred := r.register(a, "ada@example.com")
	bob, _ := r.register(a, "bob@example.com")

	// Discoverable: the most recent credential for the RP ID.
	if u, _ := r.login(a); u != bob {
		t.Errorf("discoverable sign-in as %s, want bob", u.name)
	}
	// WithCredential chooses.
	if u, _ := r.login(a, authtest.WithCredential(adaCred.ID)); u != ada {
		t.Errorf("WithCredential(ada's) signs in as %s", u.name)
	}
	// allowCredentials limits the choice.
	assertion, sess, err := r.w.BeginLogin(ada)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := json.Marshal(assertion)
	resp, err := a.Assert(o)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(resp)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := r.w.ValidateLogin(ada, *sess, parsed); err != nil || !bytes.Equal(c.ID, adaCred.ID) {
		t.Errorf("allowCredentials [ada's]: %v, credential %x", err, c.ID)
	}

	// Nothing for another RP ID, or outside allowCredentials.
	if _, err := a.Assert([]byte(`{"rpId":"other.example","challenge":"AAAAAAAAAAAAAAAAAAAAAA"}`)); !errors.Is(err, authtest.ErrNoCredential) {
		t.Errorf("another rpId: %v", err)
	}
	if _, err := a.Assert([]byte(`{"rpId":"example.com","challenge":"AAAAAAAAAAAAAAAAAAAAAA","allowCredentials":[{"id":"bm90LWhlbGQ","type":"public-key"}]}`)); !errors.Is(err, authtest.ErrNoCredential) {
		t.Errorf("allowCredentials of another: %v", err)
	}
	// With no rpId the RP ID is the origin's host, app.example.com, for
	// which the authenticator has no credential.
	if _, err := a.Assert([]byte(`{"challenge":"AAAAAAAAAAAAAAAAAAAAAA"}`)); !errors.Is(err, authtest.ErrNoCredential) {
		t.Errorf("no rpId: %v", err)
	}
	if _, err := a.Assert([]byte(`{"rpId":"example.com","challenge":"AAAAAAAAAAAAAAAAAAAAAA"}`), authtest.WithCredential([]byte("not held"))); !errors.Is(err, authtest.ErrNoCredential) {
		t.Errorf("WithCredential(not held): %v", err)
	}

	// excludeCredentials and pubKeyCredParams.
	opts, _ := r.beginRegistration(bob, webauthn.WithExclusions(webauthn.Credentials(bob.creds).CredentialDescriptors()))
	if _, err := a.Register(opts); !errors.Is(err, authtest.ErrCredentialExcluded) {
		t.Errorf("excluded: %v", err)
	}
	opts, _ = r.beginRegistration(r.newUser("rsa"), webauthn.WithCredentialParameters([]protocol.CredentialParameter{
		{Type: protocol.PublicKeyCredentialType, Algorithm: webauthncose.AlgRS256},
	}))
	if _, err := a.Register(opts); !errors.Is(err, authtest.ErrUnsupportedAlgorithm) {
		t.Errorf("RS256 only: %v", err)
	}
	if _, err := a.Register(opts, authtest.WithCounter(3)); err == nil || !strings.Contains(err.Error(), "Assert") {
		t.Errorf("Register with WithCounter: %v", err)
	}
	if n := len(a.Credentials()); n != 2 { // ada's and bob's; the failures made none
		t.Errorf("%d credentials, want 2", n)
	}
}

func TestAuthenticatorErrors(t *testing.T) {
	valid := []byte(`{"rp":{"id":"example.com"},"user":{"id":"dXNlcg","name":"u"},"challenge":"AAAAAAAAAAAAAAAAAAAAAA"}`)
	for _, tc := range []struct {
		name    string
		a       *authtest.Authenticator
		options string
	}{
		{"no origin", &authtest.Authenticator{}, string(valid)},
		{"not JSON", authtest.NewAuthenticator(testOrigin), `not json`},
		{"no challenge", authtest.NewAuthenticator(testOrigin), `{"user":{"id":"dXNlcg"}}`},
		{"no user id", authtest.NewAuthenticator(testOrigin), `{"challenge":"AAAA"}`},
		{"bad user id", authtest.NewAuthenticator(testOrigin), `{"challenge":"AAAA","user":{"id":"!!"}}`},
		{"bad algorithm", &authtest.Authenticator{Origin: testOrigin, Algorithm: -257}, string(valid)},
	} {
		if _, err := tc.a.Register([]byte(tc.options)); err == nil {
			t.Errorf("%s: Register succeeds", tc.name)
		}
	}
	a := authtest.NewAuthenticator(testOrigin)
	if _, err := a.Assert(nil, authtest.Replay()); err == nil {
		t.Errorf("Replay with no assertion yet succeeds")
	}
	if _, err := a.Register(valid); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Assert([]byte(`{"rpId":"example.com"}`)); err == nil {
		t.Errorf("Assert with no challenge succeeds")
	}
}

// Transports, attachment and AAGUID are the Authenticator's to choose,
// and concurrent ceremonies are safe.
func TestAuthenticatorFields(t *testing.T) {
	r := newRP(t)
	a := &authtest.Authenticator{
		Origin:     testOrigin,
		Attachment: "cross-platform",
		Transports: []string{"usb", "nfc"},
		AAGUID:     [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	}
	_, c := r.register(a, "ada@example.com")
	if c.Authenticator.Attachment != protocol.CrossPlatform || !bytes.Equal(c.Authenticator.AAGUID, a.AAGUID[:]) ||
		!slices.Equal(c.Transport, []protocol.AuthenticatorTransport{protocol.USB, protocol.NFC}) {
		t.Errorf("credential %+v", c)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := a.Assert([]byte(`{"rpId":"example.com","challenge":"AAAAAAAAAAAAAAAAAAAAAA"}`))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := a.Credentials()[0].Counter; n != 8 {
		t.Errorf("Counter after 8 concurrent assertions = %d", n)
	}
}

// newPasskeyServer is a server with passkeys on, at a domain name: the
// test server's own URL is an IP address, which WebAuthn refuses.
func newPasskeyServer(t *testing.T) *authtest.Server {
	t.Helper()
	return authtest.NewServer(t, auth.Config{
		AppURL:   "https://app.example.com",
		Passkeys: passkey.New(passkey.Config{}),
	})
}

// credentialIDs returns the webauthnCredentialIds of a list answer.
func credentialIDs(t *testing.T, res *authtest.Response) []string {
	t.Helper()
	var body struct {
		Status      string
		Credentials []struct {
			ID           string `json:"webauthnCredentialId"`
			RelyingParty string `json:"relyingPartyId"`
		}
	}
	if err := json.Unmarshal(res.Body, &body); err != nil || body.Status != "OK" {
		t.Fatalf("credential list: %d %s", res.StatusCode, res.Body)
	}
	var ids []string
	for _, c := range body.Credentials {
		if c.RelyingParty != "app.example.com" {
			t.Errorf("relyingPartyId %q", c.RelyingParty)
		}
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestClientPasskeys(t *testing.T) {
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			s := newPasskeyServer(t)
			a := s.NewAuthenticator()
			if a.Origin != "https://app.example.com" {
				t.Errorf("Server.NewAuthenticator().Origin = %q", a.Origin)
			}
			c := s.NewClient(m)
			res := c.SignUpWithPasskey(a, "ada@example.com")
			if res.Status != "OK" || !res.IssuedTokens() {
				t.Fatalf("SignUpWithPasskey: %d %s", res.StatusCode, res.Body)
			}
			userID, _ := c.Get("/api/session").JSON["userId"].(string)
			if userID == "" {
				t.Fatalf("no session after SignUpWithPasskey")
			}
			first := a.Credentials()[0]

			other := s.NewClient(m)
			res = other.SignInWithPasskey(a)
			if res.Status != "OK" || !res.IssuedTokens() {
				t.Fatalf("SignInWithPasskey: %d %s", res.StatusCode, res.Body)
			}
			if got, _ := other.Get("/api/session").JSON["userId"].(string); got != userID {
				t.Errorf("signed in as %q, want %q", got, userID)
			}

			// A second passkey, on another device, for the same user.
			phone := s.NewAuthenticator()
			if res := other.AddPasskey(phone); res.Status != "OK" {
				t.Fatalf("AddPasskey: %d %s", res.StatusCode, res.Body)
			}
			want := []string{first.EncodedID(), phone.Credentials()[0].EncodedID()}
			slices.Sort(want)
			if got := credentialIDs(t, other.ListPasskeys()); !slices.Equal(got, want) {
				t.Errorf("ListPasskeys = %v, want %v", got, want)
			}
			res = s.NewClient(m).SignInWithPasskey(phone)
			if res.Status != "OK" {
				t.Fatalf("sign-in with the added passkey: %d %s", res.StatusCode, res.Body)
			}
			// A session started by the added passkey, whose login has no
			// email, adds one more.
			phoneClient := s.NewClient(m)
			phoneClient.SignInWithPasskey(phone)
			if res := phoneClient.AddPasskey(authtest.NewAuthenticator(a.Origin)); res.Status != "OK" {
				t.Errorf("AddPasskey from the added passkey's session: %d %s", res.StatusCode, res.Body)
			}

			if res := other.RemovePasskey(phone.Credentials()[0].EncodedID()); res.Status != "OK" {
				t.Fatalf("RemovePasskey: %d %s", res.StatusCode, res.Body)
			}
			if got := credentialIDs(t, c.ListPasskeys()); len(got) != 2 || slices.Contains(got, phone.Credentials()[0].EncodedID()) {
				t.Errorf("ListPasskeys after RemovePasskey = %v", got)
			}
			if res := s.NewClient(m).SignInWithPasskey(phone); res.Status != "INVALID_CREDENTIALS_ERROR" || res.IssuedTokens() {
				t.Errorf("sign-in with the removed passkey: %d %s", res.StatusCode, res.Body)
			}
		})
	}
}

// An account with a password gets a passkey, and signs in with it.
func TestClientAddPasskeyToPasswordAccount(t *testing.T) {
	s := newPasskeyServer(t)
	c, u := s.SignedIn(authtest.Header)
	a := s.NewAuthenticator()
	if res := c.AddPasskey(a); res.Status != "OK" {
		t.Fatalf("AddPasskey: %d %s", res.StatusCode, res.Body)
	}
	if got := credentialIDs(t, c.ListPasskeys()); len(got) != 1 || got[0] != a.Credentials()[0].EncodedID() {
		t.Errorf("ListPasskeys = %v", got)
	}
	p := s.NewClient(authtest.Header)
	if res := p.SignInWithPasskey(a); res.Status != "OK" {
		t.Fatalf("SignInWithPasskey: %d %s", res.StatusCode, res.Body)
	}
	if got, _ := p.Get("/api/session").JSON["userId"].(string); got != u.ID {
		t.Errorf("signed in as %q, want %q", got, u.ID)
	}
}

// What the server must refuse, made with the Authenticator's options.
func TestClientPasskeyRefusals(t *testing.T) {
	s := newPasskeyServer(t)
	a := s.NewAuthenticator()
	if res := s.NewClient(authtest.Header).SignUpWithPasskey(a, "ada@example.com"); res.Status != "OK" {
		t.Fatalf("SignUpWithPasskey: %d %s", res.StatusCode, res.Body)
	}
	signIn := func(what string, want string) {
		t.Helper()
		res := s.NewClient(authtest.Header).SignInWithPasskey(a)
		if res.Status != want || res.IssuedTokens() != (want == "OK") {
			t.Errorf("%s: %d %s, want %s", what, res.StatusCode, res.Body, want)
		}
	}
	signIn("first sign-in", "OK")
	a.Next(authtest.WithOrigin("https://evil.example"))
	signIn("another origin", "INVALID_CREDENTIALS_ERROR")
	a.Next(authtest.WithRPID("evil.example"))
	signIn("another RP ID", "INVALID_CREDENTIALS_ERROR")
	a.Next(authtest.Replay())
	signIn("the last assertion, for new options", "INVALID_CREDENTIALS_ERROR")
	id := a.Credentials()[0].ID
	if err := a.SetCounter(id, 0); err != nil {
		t.Fatal(err)
	}
	signIn("a counter set back", "INVALID_CREDENTIALS_ERROR")

	// The same assertion twice for the same options.
	c := s.NewClient(authtest.Header)
	if err := a.SetCounter(id, 100); err != nil {
		t.Fatal(err)
	}
	opts := c.PasskeySignInOptions()
	cred, err := a.Assert(opts.Body)
	if err != nil {
		t.Fatal(err)
	}
	optionsID, _ := opts.JSON["webauthnGeneratedOptionsId"].(string)
	if res := c.PasskeySignIn(optionsID, cred); res.Status != "OK" {
		t.Fatalf("PasskeySignIn: %d %s", res.StatusCode, res.Body)
	}
	if res := s.NewClient(authtest.Header).PasskeySignIn(optionsID, cred); res.Status != "INVALID_CREDENTIALS_ERROR" || res.IssuedTokens() {
		t.Errorf("the same assertion again: %d %s", res.StatusCode, res.Body)
	}

	// A registration from another origin.
	a.Next(authtest.WithOrigin("https://evil.example"))
	if res := s.NewClient(authtest.Header).SignUpWithPasskey(a, "bob@example.com"); res.Status != "INVALID_CREDENTIALS_ERROR" || res.IssuedTokens() {
		t.Errorf("sign-up from another origin: %d %s", res.StatusCode, res.Body)
	}
}
