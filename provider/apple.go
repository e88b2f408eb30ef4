package provider

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AppleConfig configures Sign in with Apple.
type AppleConfig struct {
	// ClientID is the Services ID (not the App ID). Required.
	ClientID string
	// TeamID, KeyID and PrivateKey are the Apple developer team, and the
	// id and contents (PEM, PKCS#8, as downloaded: the .p8 file) of a key
	// enabled for Sign in with Apple. They make the client secret, a
	// short-lived ES256 JWT. Required.
	TeamID     string
	KeyID      string
	PrivateKey string
	// Scopes are requested; nil means name and email.
	Scopes []string
	// HTTPClient is as in OIDCConfig.
	HTTPClient *http.Client
}

// Apple returns the "apple" provider: OpenID Connect with issuer
// https://appleid.apple.com, the code returned by form post
// (response_mode=form_post, so it implements FormPoster) and, for a
// client secret, a JWT signed with the configured key. The user is the ID
// token's sub; the email (possibly a private relay address) is verified
// when email_verified says so.
//
// Apple sends the user's name only in the form post of the first
// consent, never in the ID token; relaying it is the caller's business.
func Apple(c AppleConfig) (Provider, error) {
	app, err := newClient("apple", "Apple", c.ClientID, "", c.Scopes, c.HTTPClient, "name", "email")
	if err != nil {
		return nil, err
	}
	if c.TeamID == "" || c.KeyID == "" {
		return nil, app.errorf(ErrConfig, "TeamID and KeyID are required")
	}
	key, err := parseAppleKey(c.PrivateKey)
	if err != nil {
		return nil, app.errorf(ErrConfig, "PrivateKey: %v", err)
	}
	app.clientSecret = (&appleSecret{teamID: c.TeamID, keyID: c.KeyID, clientID: c.ClientID, key: key, now: time.Now}).get
	return newOIDC(&oidcProvider{
		client:     app,
		issuer:     "https://appleid.apple.com",
		authParams: map[string][]string{"response_mode": {"form_post"}},
		formPost:   true,
	})
}

func parseAppleKey(pemKey string) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode([]byte(pemKey))
	if b == nil {
		return nil, errors.New("not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, errors.New("not a PKCS#8 private key")
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("not a P-256 key")
	}
	return ek, nil
}

// appleSecretLifetime is how long a client secret is valid. Apple allows
// six months; an hour limits what a leaked one is worth, and minting
// costs one signature an hour.
const appleSecretLifetime = time.Hour

// appleSecret mints Apple's client secret and reuses it until shortly
// before it expires.
type appleSecret struct {
	teamID, keyID, clientID string
	key                     *ecdsa.PrivateKey
	now                     func() time.Time

	mu     sync.Mutex
	secret string
	exp    time.Time
}

func (s *appleSecret) get() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	// Renewed with five minutes to go, so that a token request does not
	// reach Apple with a secret that expired on the way.
	if s.secret != "" && now.Before(s.exp.Add(-5*time.Minute)) {
		return s.secret, nil
	}
	exp := now.Add(appleSecretLifetime)
	// MapClaims, so that aud is a string as in Apple's documentation
	// (RegisteredClaims would make it an array).
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": s.teamID,
		"sub": s.clientID,
		"aud": "https://appleid.apple.com",
		"iat": now.Unix(),
		"exp": exp.Unix(),
	})
	t.Header["kid"] = s.keyID
	secret, err := t.SignedString(s.key)
	if err != nil {
		return "", err
	}
	s.secret, s.exp = secret, exp
	return secret, nil
}
