// Package totp computes and checks time-based one-time passwords (RFC
// 6238, over HOTP of RFC 4226) with HMAC-SHA-1, as authenticator apps
// do. It reports the time step a code matched, so that its caller can
// accept each step once: RFC 6238 section 5.2 asks a verifier not to
// accept a code a second time, and a check that only says "valid" cannot.
package totp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SecretSize is the size of a new secret: 160 bits, the size of SHA-1's
// output, as RFC 4226 recommends.
const SecretSize = 20

// maxCodeLen bounds what Match reads: longer input is no code.
const maxCodeLen = 10

// NewSecret returns a random secret.
func NewSecret() []byte {
	b := make([]byte, SecretSize)
	rand.Read(b)
	return b
}

// Encode returns a secret in the form authenticator apps take: RFC 4648
// base32 without padding.
func Encode(secret []byte) string {
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret)
}

// Step is the time step of t for a period: the number of periods since
// the Unix epoch.
func Step(t time.Time, period time.Duration) int64 {
	return t.Unix() / int64(period/time.Second)
}

// Code is the code of a secret at a step, of the given number of digits
// (6 to 8).
func Code(secret []byte, step int64, digits int) string {
	m := hmac.New(sha1.New, secret)
	m.Write(binary.BigEndian.AppendUint64(nil, uint64(step)))
	sum := m.Sum(nil)
	offset := sum[len(sum)-1] & 0x0f
	n := binary.BigEndian.Uint32(sum[offset:]) & 0x7fffffff
	mod := uint32(1)
	for range digits {
		mod *= 10
	}
	s := strconv.FormatUint(uint64(n%mod), 10)
	return strings.Repeat("0", digits-len(s)) + s
}

// Match returns the step, among the skew steps on either side of now's,
// whose code is code, and whether there is one. It compares every
// candidate in constant time, so how long it takes tells nothing of the
// secret; input that is not digits-long is refused outright.
func Match(secret []byte, code string, now time.Time, period time.Duration, skew, digits int) (int64, bool) {
	if len(code) != digits || len(code) > maxCodeLen {
		return 0, false
	}
	current := Step(now, period)
	var matched int64
	found := 0
	for step := current - int64(skew); step <= current+int64(skew); step++ {
		eq := subtle.ConstantTimeCompare([]byte(Code(secret, step, digits)), []byte(code))
		if eq == 1 && found == 0 {
			matched = step
		}
		found |= eq
	}
	return matched, found == 1
}

// URI is the otpauth URI of a secret, which authenticator apps read from
// a QR code: the issuer (the application's name) and the account (the
// user's email) label it.
func URI(issuer, account string, secret []byte, period time.Duration, digits int) string {
	label := url.PathEscape(issuer)
	if account != "" {
		label += ":" + url.PathEscape(account)
	}
	q := url.Values{
		"secret": {Encode(secret)},
		"issuer": {issuer},
		"digits": {strconv.Itoa(digits)},
		"period": {strconv.Itoa(int(period / time.Second))},
	}
	return "otpauth://totp/" + label + "?" + q.Encode()
}
