package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/latchkit/auth/store"
)

// jwtLeeway absorbs clock differences between application instances
// where a skew would refuse a valid token: an iat or nbf slightly in the
// future. It never extends a token's life: exp is exact (SERVICE-SPEC
// section 3, rule 4).
const jwtLeeway = 5 * time.Second

// accessTokenType is the value of the tokenType claim of access tokens, so
// that no other token signed with the same key can pass as one.
const accessTokenType = "access"

// accessClaims is the payload of an access token. The SuperTokens names
// (sessionHandle, tId, rsub) keep the front-token familiar to its SDKs.
type accessClaims struct {
	Subject       string           `json:"sub"`
	RecipeUserID  string           `json:"rsub"`
	SessionHandle string           `json:"sessionHandle"`
	TenantID      string           `json:"tId"`
	TokenType     string           `json:"tokenType"`
	Issuer        string           `json:"iss"`
	IssuedAt      *jwt.NumericDate `json:"iat"`
	ExpiresAt     *jwt.NumericDate `json:"exp"`
	NotBefore     *jwt.NumericDate `json:"nbf,omitempty"` // never issued, but honoured (RFC 7519)
	ID            string           `json:"jti"`
	// Claims are the features' claims (claims.go): encoded by appendJSON,
	// read by Auth.readClaims.
	Claims namedClaims `json:"-"`
}

// appendJSON appends the claims as json.Marshal encodes them, without its
// reflection: an access token is made at every sign-in and refresh.
func (c *accessClaims) appendJSON(b []byte) []byte {
	b = append(b, `{"sub":`...)
	b = appendJSONString(b, c.Subject)
	b = append(b, `,"rsub":`...)
	b = appendJSONString(b, c.RecipeUserID)
	b = append(b, `,"sessionHandle":`...)
	b = appendJSONString(b, c.SessionHandle)
	b = append(b, `,"tId":`...)
	b = appendJSONString(b, c.TenantID)
	b = append(b, `,"tokenType":`...)
	b = appendJSONString(b, c.TokenType)
	b = append(b, `,"iss":`...)
	b = appendJSONString(b, c.Issuer)
	b = append(b, `,"iat":`...)
	b = appendNumericDate(b, c.IssuedAt)
	b = append(b, `,"exp":`...)
	b = appendNumericDate(b, c.ExpiresAt)
	if c.NotBefore != nil {
		b = append(b, `,"nbf":`...)
		b = appendNumericDate(b, c.NotBefore)
	}
	b = append(b, `,"jti":`...)
	b = appendJSONString(b, c.ID)
	b = c.Claims.appendJSON(b)
	return append(b, '}')
}

// appendNumericDate appends d as golang-jwt encodes it: whole seconds, or
// null.
func appendNumericDate(b []byte, d *jwt.NumericDate) []byte {
	if d == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, d.Unix(), 10)
}

// appendJSONString appends s as a JSON string. The claims are ids, base64
// and an issuer: plain ASCII, written as they are; anything else goes
// through encoding/json, which knows every escape.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func (c *accessClaims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt, nil }

func (c *accessClaims) GetIssuedAt() (*jwt.NumericDate, error) { return c.IssuedAt, nil }

func (c *accessClaims) GetNotBefore() (*jwt.NumericDate, error) { return c.NotBefore, nil }

func (c *accessClaims) GetIssuer() (string, error) { return c.Issuer, nil }

func (c *accessClaims) GetSubject() (string, error) { return c.Subject, nil }

func (c *accessClaims) GetAudience() (jwt.ClaimStrings, error) { return nil, nil }

var errNotAccessToken = errors.New("not an access token")

// Validate runs after the standard checks of the parser.
func (c *accessClaims) Validate() error {
	if c.TokenType != accessTokenType || c.Subject == "" || c.SessionHandle == "" || c.IssuedAt == nil {
		return errNotAccessToken
	}
	return nil
}

// issueAccess signs an access token for s with key, valid until exp, and
// returns the pair's access half and front-token; the caller fills in the
// refresh half, with the claims cv (nil for none).
func (a *Auth) issueAccess(key *signingKey, s store.Session, now, exp time.Time, cv *claimValues) (issued, error) {
	jti := make([]byte, 16)
	rand.Read(jti)
	login := s.LoginID
	if login == "" {
		login = s.UserID
	}
	c := &accessClaims{
		Subject:       s.UserID,
		RecipeUserID:  login,
		SessionHandle: s.Handle,
		TenantID:      store.TenantID(s.Tenant),
		TokenType:     accessTokenType,
		Issuer:        a.cfg.Issuer,
		IssuedAt:      jwt.NewNumericDate(now),
		ExpiresAt:     jwt.NewNumericDate(exp),
		ID:            string(base64.RawURLEncoding.AppendEncode(make([]byte, 0, 22), jti)),
		Claims:        namedClaims{names: a.claimNames},
	}
	if cv != nil {
		c.Claims.values = *cv
	}
	access, payload, err := signAccessToken(key, c, make([]byte, 0, 320))
	if err != nil {
		return issued{}, err
	}
	return issued{
		access:        access,
		accessExpiry:  c.ExpiresAt.Time,
		refreshExpiry: s.ExpiresAt,
		frontToken:    frontToken(s.UserID, c.ExpiresAt.Time, payload),
	}, nil
}

// signAccessToken returns the access token of c signed with key, and its
// payload, the encoded claims, which the front-token repeats, appended to
// buf (a caller's buffer on its stack spares an allocation). It encodes
// and signs without golang-jwt's reflection, because every sign-in and
// refresh signs; so it is the one place access tokens are made, and it
// promises what golang-jwt would have made (FuzzAccessTokenEncoding
// checks both against it):
//
//   - the payload is byte for byte encoding/json's encoding of c;
//   - the token is byte for byte jwt.Token.SignedString of c with key's
//     method, header and signing key, so golang-jwt's parser accepts it
//     with key and reads c back.
//
// The header is the key's own, encoded once when the key is loaded.
func signAccessToken(key *signingKey, c *accessClaims, buf []byte) (token string, payload []byte, err error) {
	payload = c.appendJSON(buf)
	// The token is built in one buffer: the signing input, then the
	// signature's text; an HS256 MAC goes in the buffer's last bytes,
	// past where its text ends.
	enc := base64.RawURLEncoding
	signingLen := len(key.header) + 1 + enc.EncodedLen(len(payload))
	t := make([]byte, 0, signingLen+1+enc.EncodedLen(ed25519.SignatureSize)+sha256.Size)
	t = append(t, key.header...)
	t = append(t, '.')
	t = enc.AppendEncode(t, payload)
	var sig []byte
	if key.method == jwt.SigningMethodHS256 {
		sumAt := cap(t) - sha256.Size
		sig = key.MAC(t[sumAt:sumAt], nil, t)
	} else if sig, err = key.method.Sign(string(t), key.sign); err != nil {
		return "", nil, fmt.Errorf("auth: signing an access token: %w", err)
	}
	t = append(t, '.')
	t = enc.AppendEncode(t, sig)
	return string(t), payload, nil
}

// lookupKey returns the key that verifies t: the one named by its kid, of
// its algorithm, within its verification period. The context is the
// request's: the keyring may read the store for an unknown key id.
func (a *Auth) lookupKey(ctx context.Context, t *jwt.Token) (*signingKey, error) {
	kid, _ := t.Header["kid"].(string)
	key, ok := a.keys.verifier(ctx, kid)
	if !ok || key.method.Alg() != t.Method.Alg() || !a.cfg.Now().Before(key.verifyUntil) {
		return nil, errors.New("unknown signing key")
	}
	return key, nil
}

// verifiedToken is an access token that passed full verification: what
// the token cache keeps, and what verifyAccess returns. It is immutable
// once made. The fields that decide whether it is still good are kept
// apart from the Session handed to handlers, so a handler that writes to
// its Session (it must not) cannot change how the token is checked.
type verifiedToken struct {
	session   *Session       // shared by every request with this token; handlers get copies
	handle    string         // the session, for Config.CheckSessionInStore
	claims    claimValues    // as the token has them, to carry into a rewritten token
	parsed    [maxClaims]any // the claims as their features read them
	key       *signingKey    // the key that verified the signature
	issuedAt  time.Time
	expiresAt time.Time
	notBefore time.Time // zero when the token has no nbf
}

// stillValid reports whether the token passes, at now, every check of a
// full verification that depends on anything but the token's bytes and
// the Auth's fixed configuration:
//
//   - the time checks of a full verification, with the same clock
//     (Config.Now): before exp, exactly; iat and nbf not in the future,
//     with the leeway for clock skew;
//   - the key: still in the keyring's current snapshot (the very same
//     *signingKey, so any reload of the keys sends the token through a
//     full verification again) and within its verifyUntil.
//
// Everything else a full verification checks is a property of the token
// string and of the parser, which New builds once: the signature, the
// algorithm allow-list and its match with the key, the header and claim
// decoding, the issuer, the token type and the required claims. A cache
// keyed by a hash of the whole token string cannot see a different token.
// What the request brings (the CSRF rule) and what the store knows (the
// session's revocation, with CheckSessionInStore) are checked by
// verifyRequest on every request, cached token or not. A key removed from
// the store is noticed by the uncached path only when the keyring reloads;
// the snapshot check makes a cached token stop at that same reload.
func (vt *verifiedToken) stillValid(k *keyring, now time.Time) bool {
	return now.Before(vt.expiresAt) &&
		!now.Before(vt.issuedAt.Add(-jwtLeeway)) &&
		(vt.notBefore.IsZero() || !now.Before(vt.notBefore.Add(-jwtLeeway))) &&
		now.Before(vt.key.verifyUntil) && k.loaded(vt.key)
}

// verifyAccess checks an access token and returns it verified. A token
// verified before is taken from the token cache if it is still valid
// (see stillValid); any other goes through golang-jwt in full, and into
// the cache if it passes.
func (a *Auth) verifyAccess(ctx context.Context, tok string, now time.Time) (*verifiedToken, error) {
	a.keys.refresh(ctx, now)
	h := a.verified.Hash(tok)
	cached, _ := a.verified.Get(h, tok)
	if cached != nil && cached.stillValid(a.keys, now) {
		return cached, nil
	}
	vt, err := a.parseAccess(ctx, tok)
	if err != nil {
		if cached != nil {
			a.verified.Remove(h)
		}
		reason := ReasonInvalid
		if errors.Is(err, jwt.ErrTokenExpired) {
			reason = ReasonExpired
		}
		return nil, &SessionError{Reason: reason, Err: err, answer: ErrTryRefreshToken}
	}
	// A full shard drops first the tokens past their expiry or their
	// key's; the token is copied, not kept as a slice of a larger header.
	until := vt.expiresAt
	if vt.key.verifyUntil.Before(until) {
		until = vt.key.verifyUntil
	}
	a.verified.Put(h, strings.Clone(tok), until, vt, a.cfg.Now())
	return vt, nil
}

// parseAccess is the full verification of an access token by golang-jwt,
// with the options New gives the parser.
func (a *Auth) parseAccess(ctx context.Context, tok string) (*verifiedToken, error) {
	var c accessClaims
	var key *signingKey // the one lookupKey found, so the one that verified
	if _, err := a.parser.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		k, err := a.lookupKey(ctx, t)
		if err != nil {
			return nil, err
		}
		key = k
		return k.verify, nil
	}); err != nil {
		return nil, err
	}
	// golang-jwt applies its leeway to exp as well; the token's life
	// ends at exp exactly.
	if !a.cfg.Now().Before(c.ExpiresAt.Time) {
		return nil, fmt.Errorf("%w: expired at %v", jwt.ErrTokenExpired, c.ExpiresAt.Time.UTC())
	}
	vt := &verifiedToken{
		session: &Session{
			UserID:    c.Subject,
			LoginID:   c.RecipeUserID,
			Handle:    c.SessionHandle,
			TenantID:  c.TenantID,
			TokenID:   c.ID,
			IssuedAt:  c.IssuedAt.Time,
			ExpiresAt: c.ExpiresAt.Time,
		},
		handle:    c.SessionHandle,
		key:       key,
		issuedAt:  c.IssuedAt.Time,
		expiresAt: c.ExpiresAt.Time,
	}
	if c.NotBefore != nil {
		vt.notBefore = c.NotBefore.Time
	}
	if err := a.readClaims(vt, tok); err != nil {
		return nil, err
	}
	vt.session.Operator, _ = vt.parsed[claimImp].(string)
	return vt, nil
}
