package authtest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// The COSE algorithms an Authenticator makes credentials with.
const (
	ES256 = -7 // ECDSA with P-256 and SHA-256, what most passkeys use
	EdDSA = -8 // Ed25519
)

// The errors of an Authenticator, in the cases where a browser's
// navigator.credentials call would fail.
var (
	// ErrNoCredential: the authenticator holds no credential that the
	// options allow (the browser's NotAllowedError).
	ErrNoCredential = errors.New("authtest: the authenticator holds no credential for these options")
	// ErrCredentialExcluded: the options' excludeCredentials names a
	// credential the authenticator holds (the browser's InvalidStateError).
	ErrCredentialExcluded = errors.New("authtest: the authenticator holds an excluded credential")
	// ErrUnsupportedAlgorithm: the options' pubKeyCredParams do not list
	// the authenticator's algorithm (the browser's NotSupportedError).
	ErrUnsupportedAlgorithm = errors.New("authtest: the options do not offer the authenticator's algorithm")
)

// Authenticator is a WebAuthn authenticator that keeps its keys in
// memory, and plays the browser's part as well, as
// @simplewebauthn/browser's startRegistration and startAuthentication do:
// it turns the server's options into the credential JSON the frontend
// SDKs send. It lets a test sign up and in with passkeys without a
// browser.
//
// Its credentials are discoverable (passkeys) and its attestation is
// "none". Register makes a credential; Assert signs in with one. Each
// assertion adds 1 to the credential's signature counter, unless the
// credential is backup eligible (a synced passkey), whose counter stays
// 0. SetCounter sets a counter, and the CeremonyOptions change one
// ceremony (the origin, the RP ID, the counter, the credential, or a
// replay of the last assertion) to test that a server refuses it.
//
// The zero value has no Origin, which every ceremony needs; set it or use
// NewAuthenticator (or Server.NewAuthenticator). The fields are read at
// each ceremony; BackupEligible and Algorithm belong to the credentials
// made while they are set. The methods are safe for concurrent use, but
// the fields must not change while one runs.
type Authenticator struct {
	// Origin is the origin of the page the browser would run the
	// ceremony on, reported in clientDataJSON: "https://app.example.com".
	Origin string
	// BackupEligible makes new credentials synced passkeys: their
	// authenticator data have the BE (backup eligible) and BS (backed
	// up) flags, and their counter stays 0.
	BackupEligible bool
	// NoUserVerification clears the UV flag of every response, as an
	// authenticator with no PIN or biometrics does. By default the user
	// is verified.
	NoUserVerification bool
	// Algorithm is the COSE algorithm of new credentials, ES256 or
	// EdDSA; 0 means ES256.
	Algorithm int
	// Attachment is the "authenticatorAttachment" of the responses;
	// "" means "platform".
	Attachment string
	// Transports are the "transports" of a registration; nil means
	// ["internal"].
	Transports []string
	// AAGUID identifies the authenticator's model in the attested
	// credential data of a registration; zero by default.
	AAGUID [16]byte

	mu    sync.Mutex
	creds []*heldCredential // in the order registered
	next  []CeremonyOption
	last  []byte // the last assertion
}

// NewAuthenticator returns an Authenticator with no credentials for pages
// at origin, as "https://app.example.com" (scheme, host and port, no
// path).
func NewAuthenticator(origin string) *Authenticator {
	return &Authenticator{Origin: origin}
}

// AuthenticatorCredential describes a credential an Authenticator holds.
type AuthenticatorCredential struct {
	// ID is the credential ID; EncodedID returns the form the wire uses.
	ID []byte
	// RPID is the relying party the credential is for.
	RPID string
	// UserHandle is the user.id of the registration options, decoded;
	// assertions return it as "userHandle".
	UserHandle []byte
	// UserName is the user.name of the registration options.
	UserName string
	// Counter is the signature counter the next assertion adds 1 to.
	Counter uint32
	// Algorithm is the COSE algorithm of its key: ES256 or EdDSA.
	Algorithm int
	// BackupEligible is true for a synced passkey.
	BackupEligible bool
	// PublicKey is its public key: *ecdsa.PublicKey or ed25519.PublicKey.
	PublicKey crypto.PublicKey
}

// EncodedID returns the credential ID in unpadded base64url, as the
// credential's "id", and as a server names the credential
// ("webauthnCredentialId").
func (c AuthenticatorCredential) EncodedID() string {
	return base64.RawURLEncoding.EncodeToString(c.ID)
}

type heldCredential struct {
	AuthenticatorCredential
	key crypto.Signer
}

// A CeremonyOption changes one Register or Assert call, to make a
// response that a correct server refuses. Pass it to the call, or to
// Next for a call that a Client method makes.
type CeremonyOption func(*ceremony)

type ceremony struct {
	origin     string // clientDataJSON's origin, instead of Authenticator.Origin
	rpID       string // the RP ID hashed into the authenticator data
	counter    uint32
	hasCounter bool
	credential []byte
	replay     bool
}

// WithOrigin makes the ceremony report origin in clientDataJSON instead of
// the Authenticator's Origin: the page of another site.
func WithOrigin(origin string) CeremonyOption {
	return func(c *ceremony) { c.origin = origin }
}

// WithRPID makes the ceremony hash rpID into the authenticator data
// instead of the options' RP ID: a credential of another site. The
// credential is still chosen by, and stored under, the options' RP ID.
func WithRPID(rpID string) CeremonyOption {
	return func(c *ceremony) { c.rpID = rpID }
}

// WithCounter makes an assertion carry counter n, and leaves the
// credential's own counter as it was: a clone's or a rolled-back
// authenticator's one assertion. It applies to Assert only.
func WithCounter(n uint32) CeremonyOption {
	return func(c *ceremony) { c.counter, c.hasCounter = n, true }
}

// WithCredential makes an assertion use the credential with this ID,
// whatever the options' rpId and allowCredentials say, as long as the
// Authenticator holds it. By default an assertion uses the most recently
// registered credential that the options allow. It applies to Assert
// only.
func WithCredential(id []byte) CeremonyOption {
	return func(c *ceremony) { c.credential = bytes.Clone(id) }
}

// Replay makes Assert return its previous assertion again, byte for byte,
// whatever the options: a replayed sign-in. It applies to Assert only.
func Replay() CeremonyOption {
	return func(c *ceremony) { c.replay = true }
}

// Next makes the next Register or Assert call, whichever comes first,
// behave as if it were given opts too. It changes a ceremony that a
// Client method runs:
//
//	a.Next(authtest.WithOrigin("https://evil.example"))
//	res := c.SignInWithPasskey(a) // INVALID_CREDENTIALS_ERROR
func (a *Authenticator) Next(opts ...CeremonyOption) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = append(a.next, opts...)
}

// ceremonyLocked gathers the options of a call and those set by Next.
func (a *Authenticator) ceremonyLocked(opts []CeremonyOption) ceremony {
	var c ceremony
	for _, o := range append(a.next, opts...) {
		o(&c)
	}
	a.next = nil
	return c
}

// Credentials returns the credentials the Authenticator holds, in the
// order they were registered.
func (a *Authenticator) Credentials() []AuthenticatorCredential {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]AuthenticatorCredential, len(a.creds))
	for i, c := range a.creds {
		out[i] = c.AuthenticatorCredential
		out[i].ID = bytes.Clone(c.ID)
		out[i].UserHandle = bytes.Clone(c.UserHandle)
	}
	return out
}

// SetCounter sets the signature counter of the credential with this ID;
// the next assertion with it carries n+1 (n for a backup eligible one).
// Setting it back makes the next assertion look like a clone's. It
// returns ErrNoCredential if the Authenticator does not hold the
// credential.
func (a *Authenticator) SetCounter(credentialID []byte, n uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.creds {
		if bytes.Equal(c.ID, credentialID) {
			c.Counter = n
			return nil
		}
	}
	return ErrNoCredential
}

// registerOptions are the members of PublicKeyCredentialCreationOptionsJSON
// the Authenticator reads.
type registerOptions struct {
	RP struct {
		ID string `json:"id"`
	} `json:"rp"`
	User struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"user"`
	Challenge        string `json:"challenge"`
	PubKeyCredParams []struct {
		Alg  int    `json:"alg"`
		Type string `json:"type"`
	} `json:"pubKeyCredParams"`
	ExcludeCredentials []credentialDescriptor `json:"excludeCredentials"`
}

// signInOptions are the members of PublicKeyCredentialRequestOptionsJSON
// the Authenticator reads.
type signInOptions struct {
	RPID             string                 `json:"rpId"`
	Challenge        string                 `json:"challenge"`
	AllowCredentials []credentialDescriptor `json:"allowCredentials"`
}

type credentialDescriptor struct {
	ID string `json:"id"`
}

// Register creates a credential, as navigator.credentials.create does
// with @simplewebauthn/browser's startRegistration. options is the
// server's JSON answer: PublicKeyCredentialCreationOptionsJSON, either at
// the top level beside other members (as the SuperTokens register options
// answer has it) or under "publicKey" (as a CredentialCreationOptions
// object). It returns the RegistrationResponseJSON to send as
// "credential".
//
// The credential's RP ID is the options' rp.id, or the host of the
// origin if it has none; its user handle is user.id. Register fails with
// ErrCredentialExcluded if excludeCredentials names a credential the
// Authenticator holds for that RP ID, and with ErrUnsupportedAlgorithm if
// pubKeyCredParams does not list its Algorithm. A registration does not
// replace a credential for the same user: the Authenticator keeps them
// all.
//
// WithOrigin and WithRPID apply; the other CeremonyOptions are an error.
func (a *Authenticator) Register(options []byte, opts ...CeremonyOption) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cer := a.ceremonyLocked(opts)
	if cer.hasCounter || cer.credential != nil || cer.replay {
		return nil, errors.New("authtest: WithCounter, WithCredential and Replay apply to Assert, not Register")
	}
	var o registerOptions
	if err := decodeOptions(options, &o); err != nil {
		return nil, err
	}
	origin, rpID, err := a.party(cer, o.RP.ID)
	if err != nil {
		return nil, err
	}
	if o.Challenge == "" {
		return nil, errors.New("authtest: the registration options have no challenge")
	}
	userHandle, err := decodeBase64URL(o.User.ID)
	if err != nil || len(userHandle) == 0 {
		return nil, fmt.Errorf("authtest: the registration options' user.id %q is not base64url", o.User.ID)
	}
	alg := a.Algorithm
	if alg == 0 {
		alg = ES256
	}
	if alg != ES256 && alg != EdDSA {
		return nil, fmt.Errorf("authtest: Authenticator.Algorithm %d is neither ES256 (-7) nor EdDSA (-8)", alg)
	}
	offered := len(o.PubKeyCredParams) == 0 && alg == ES256 // the default list is ES256 and RS256
	for _, p := range o.PubKeyCredParams {
		offered = offered || p.Alg == alg && p.Type == "public-key"
	}
	if !offered {
		return nil, ErrUnsupportedAlgorithm
	}
	for _, d := range o.ExcludeCredentials {
		id, err := decodeBase64URL(d.ID)
		if err != nil {
			return nil, fmt.Errorf("authtest: excludeCredentials id %q is not base64url", d.ID)
		}
		if c := a.findLocked(id); c != nil && c.RPID == rpID {
			return nil, ErrCredentialExcluded
		}
	}

	cred := &heldCredential{AuthenticatorCredential: AuthenticatorCredential{
		ID:             make([]byte, 32),
		RPID:           rpID,
		UserHandle:     userHandle,
		UserName:       o.User.Name,
		Algorithm:      alg,
		BackupEligible: a.BackupEligible,
	}}
	rand.Read(cred.ID)
	if alg == EdDSA {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		cred.key = priv
	} else {
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		cred.key = priv
	}
	cred.PublicKey = cred.key.Public()
	coseKey, err := coseKey(cred.PublicKey)
	if err != nil {
		return nil, err
	}
	spki, err := x509.MarshalPKIXPublicKey(cred.PublicKey)
	if err != nil {
		return nil, err
	}

	hashed := rpID
	if cer.rpID != "" {
		hashed = cer.rpID
	}
	authData := a.authData(hashed, cred, flagAttested, 0)
	authData = append(authData, a.AAGUID[:]...)
	authData = binary.BigEndian.AppendUint16(authData, uint16(len(cred.ID)))
	authData = append(authData, cred.ID...)
	authData = append(authData, coseKey...)

	var att cborBuf // {"fmt": "none", "attStmt": {}, "authData": ...}, keys in CTAP2 order
	att = att.mapHeader(3).text("fmt").text("none").text("attStmt").mapHeader(0).text("authData").bytes(authData)

	transports := a.Transports
	if transports == nil {
		transports = []string{"internal"}
	}
	id := cred.EncodedID()
	out, err := marshalJSON(struct {
		ID       string `json:"id"`
		RawID    string `json:"rawId"`
		Type     string `json:"type"`
		Response struct {
			ClientDataJSON     string   `json:"clientDataJSON"`
			AttestationObject  string   `json:"attestationObject"`
			Transports         []string `json:"transports"`
			PublicKeyAlgorithm int      `json:"publicKeyAlgorithm"`
			PublicKey          string   `json:"publicKey"`
			AuthenticatorData  string   `json:"authenticatorData"`
		} `json:"response"`
		ClientExtensionResults  struct{} `json:"clientExtensionResults"`
		AuthenticatorAttachment string   `json:"authenticatorAttachment"`
	}{
		ID: id, RawID: id, Type: "public-key",
		Response: struct {
			ClientDataJSON     string   `json:"clientDataJSON"`
			AttestationObject  string   `json:"attestationObject"`
			Transports         []string `json:"transports"`
			PublicKeyAlgorithm int      `json:"publicKeyAlgorithm"`
			PublicKey          string   `json:"publicKey"`
			AuthenticatorData  string   `json:"authenticatorData"`
		}{
			ClientDataJSON:     b64(clientData("webauthn.create", o.Challenge, origin)),
			AttestationObject:  b64(att),
			Transports:         transports,
			PublicKeyAlgorithm: alg,
			PublicKey:          b64(spki),
			AuthenticatorData:  b64(authData),
		},
		AuthenticatorAttachment: a.attachment(),
	})
	if err != nil {
		return nil, err
	}
	a.creds = append(a.creds, cred)
	return out, nil
}

// Assert signs in with a credential, as navigator.credentials.get does
// with @simplewebauthn/browser's startAuthentication. options is the
// server's JSON answer: PublicKeyCredentialRequestOptionsJSON at the top
// level (as the SuperTokens sign-in options answer has it) or under
// "publicKey". It returns the AuthenticationResponseJSON to send as
// "credential".
//
// The credential is the most recently registered one for the options'
// rpId (the host of the origin if there is none), among those of
// allowCredentials if that is not empty; WithCredential chooses another.
// Assert fails with ErrNoCredential if there is none.
func (a *Authenticator) Assert(options []byte, opts ...CeremonyOption) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cer := a.ceremonyLocked(opts)
	if cer.replay {
		if a.last == nil {
			return nil, errors.New("authtest: Replay: the authenticator has made no assertion yet")
		}
		return bytes.Clone(a.last), nil
	}
	var o signInOptions
	if err := decodeOptions(options, &o); err != nil {
		return nil, err
	}
	origin, rpID, err := a.party(cer, o.RPID)
	if err != nil {
		return nil, err
	}
	if o.Challenge == "" {
		return nil, errors.New("authtest: the sign-in options have no challenge")
	}
	cred, err := a.chooseLocked(cer, rpID, o.AllowCredentials)
	if err != nil {
		return nil, err
	}

	counter := cred.Counter
	switch {
	case cer.hasCounter:
		counter = cer.counter
	case !cred.BackupEligible:
		cred.Counter++
		counter = cred.Counter
	}
	hashed := rpID
	if cer.rpID != "" {
		hashed = cer.rpID
	}
	authData := a.authData(hashed, cred, 0, counter)
	cd := clientData("webauthn.get", o.Challenge, origin)
	cdHash := sha256.Sum256(cd)
	signed := append(bytes.Clone(authData), cdHash[:]...)
	var sig []byte
	if k, ok := cred.key.(ed25519.PrivateKey); ok {
		sig = ed25519.Sign(k, signed)
	} else {
		digest := sha256.Sum256(signed)
		if sig, err = ecdsa.SignASN1(rand.Reader, cred.key.(*ecdsa.PrivateKey), digest[:]); err != nil {
			return nil, err
		}
	}

	id := cred.EncodedID()
	out, err := marshalJSON(struct {
		ID       string `json:"id"`
		RawID    string `json:"rawId"`
		Type     string `json:"type"`
		Response struct {
			ClientDataJSON    string `json:"clientDataJSON"`
			AuthenticatorData string `json:"authenticatorData"`
			Signature         string `json:"signature"`
			UserHandle        string `json:"userHandle"`
		} `json:"response"`
		ClientExtensionResults  struct{} `json:"clientExtensionResults"`
		AuthenticatorAttachment string   `json:"authenticatorAttachment"`
	}{
		ID: id, RawID: id, Type: "public-key",
		Response: struct {
			ClientDataJSON    string `json:"clientDataJSON"`
			AuthenticatorData string `json:"authenticatorData"`
			Signature         string `json:"signature"`
			UserHandle        string `json:"userHandle"`
		}{
			ClientDataJSON:    b64(cd),
			AuthenticatorData: b64(authData),
			Signature:         b64(sig),
			UserHandle:        b64(cred.UserHandle),
		},
		AuthenticatorAttachment: a.attachment(),
	})
	if err != nil {
		return nil, err
	}
	a.last = out
	return bytes.Clone(out), nil
}

// party returns the origin a ceremony reports and the RP ID its
// credential is for.
func (a *Authenticator) party(cer ceremony, rpID string) (origin, id string, err error) {
	origin = a.Origin
	if cer.origin != "" {
		origin = cer.origin
	}
	if origin == "" {
		return "", "", errors.New("authtest: the Authenticator has no Origin")
	}
	if rpID == "" {
		u, err := url.Parse(a.Origin)
		if err != nil || u.Hostname() == "" {
			return "", "", fmt.Errorf("authtest: no rpId in the options, and no host in the Origin %q", a.Origin)
		}
		rpID = u.Hostname()
	}
	return origin, rpID, nil
}

func (a *Authenticator) findLocked(id []byte) *heldCredential {
	for _, c := range a.creds {
		if bytes.Equal(c.ID, id) {
			return c
		}
	}
	return nil
}

// chooseLocked picks the credential of an assertion.
func (a *Authenticator) chooseLocked(cer ceremony, rpID string, allow []credentialDescriptor) (*heldCredential, error) {
	if cer.credential != nil {
		if c := a.findLocked(cer.credential); c != nil {
			return c, nil
		}
		return nil, ErrNoCredential
	}
	var allowed [][]byte
	for _, d := range allow {
		id, err := decodeBase64URL(d.ID)
		if err != nil {
			return nil, fmt.Errorf("authtest: allowCredentials id %q is not base64url", d.ID)
		}
		allowed = append(allowed, id)
	}
	for i := len(a.creds) - 1; i >= 0; i-- {
		c := a.creds[i]
		if c.RPID != rpID {
			continue
		}
		if len(allowed) == 0 {
			return c, nil
		}
		for _, id := range allowed {
			if bytes.Equal(id, c.ID) {
				return c, nil
			}
		}
	}
	return nil, ErrNoCredential
}

// The flags of the authenticator data.
const (
	flagUserPresent    = 0x01
	flagUserVerified   = 0x04
	flagBackupEligible = 0x08
	flagBackedUp       = 0x10
	flagAttested       = 0x40
)

// authData returns the authenticator data up to the counter: the SHA-256
// of rpID, the flags and the counter.
func (a *Authenticator) authData(rpID string, c *heldCredential, flags byte, counter uint32) []byte {
	flags |= flagUserPresent
	if !a.NoUserVerification {
		flags |= flagUserVerified
	}
	if c.BackupEligible {
		flags |= flagBackupEligible | flagBackedUp
	}
	h := sha256.Sum256([]byte(rpID))
	return binary.BigEndian.AppendUint32(append(h[:], flags), counter)
}

func (a *Authenticator) attachment() string {
	if a.Attachment == "" {
		return "platform"
	}
	return a.Attachment
}

// coseKey returns a public key as a COSE_Key in CTAP2 canonical CBOR.
func coseKey(pub crypto.PublicKey) ([]byte, error) {
	var b cborBuf
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		point, err := k.Bytes() // 0x04 ‖ x ‖ y
		if err != nil {
			return nil, err
		}
		// {1 (kty): 2 (EC2), 3 (alg): -7, -1 (crv): 1 (P-256), -2: x, -3: y}
		return b.mapHeader(5).int(1).int(2).int(3).int(ES256).int(-1).int(1).
			int(-2).bytes(point[1:33]).int(-3).bytes(point[33:65]), nil
	case ed25519.PublicKey:
		// {1 (kty): 1 (OKP), 3 (alg): -8, -1 (crv): 6 (Ed25519), -2: x}
		return b.mapHeader(4).int(1).int(1).int(3).int(EdDSA).int(-1).int(6).int(-2).bytes(k), nil
	}
	return nil, fmt.Errorf("authtest: no COSE encoding for a %T", pub)
}

// cborBuf appends CBOR items: only the few kinds WebAuthn needs, in
// definite lengths. Callers write map keys in canonical order.
type cborBuf []byte

func (b cborBuf) head(major byte, n uint64) cborBuf {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func (b cborBuf) int(v int64) cborBuf {
	if v >= 0 {
		return b.head(0, uint64(v))
	}
	return b.head(1, uint64(-1-v))
}

func (b cborBuf) bytes(p []byte) cborBuf { return append(b.head(2, uint64(len(p))), p...) }
func (b cborBuf) text(s string) cborBuf  { return append(b.head(3, uint64(len(s))), s...) }
func (b cborBuf) mapHeader(n int) cborBuf {
	return b.head(5, uint64(n))
}

// clientData returns the clientDataJSON of a ceremony, in the members'
// order browsers use.
func clientData(typ, challenge, origin string) []byte {
	b, _ := marshalJSON(struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}{typ, challenge, origin, false})
	return b
}

// marshalJSON is json.Marshal without the escaping of <, > and &, which
// browsers do not do.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decodeOptions reads the options of a ceremony, at the top level or
// under "publicKey".
func decodeOptions(options []byte, v any) error {
	var wrapped struct {
		PublicKey json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal(options, &wrapped); err != nil {
		return fmt.Errorf("authtest: the options are not a JSON object: %v", err)
	}
	if len(wrapped.PublicKey) > 0 && wrapped.PublicKey[0] == '{' {
		options = wrapped.PublicKey
	}
	if err := json.Unmarshal(options, v); err != nil {
		return fmt.Errorf("authtest: reading the options: %v", err)
	}
	return nil
}

func b64(p []byte) string { return base64.RawURLEncoding.EncodeToString(p) }

// decodeBase64URL decodes base64url, with or without padding, and
// accepts the standard alphabet too.
func decodeBase64URL(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	return base64.RawURLEncoding.DecodeString(s)
}
