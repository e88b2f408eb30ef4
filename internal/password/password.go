// Package password hashes and verifies passwords.
//
// New hashes are argon2id in the PHC string format
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash), so the parameters travel with
// each hash and can be raised without invalidating old ones. bcrypt hashes
// (imported from other systems) verify too, and are reported as needing a
// rehash.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/latchkit/auth/internal/argon2id"
	"golang.org/x/crypto/bcrypt"
)

// Params are argon2id parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // iterations
	Threads uint8
}

// Default are the OWASP minimum parameters for argon2id: 19 MiB, two
// iterations, one thread.
var Default = Params{Memory: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// bcryptMax is the longest input bcrypt uses; longer ones would be
	// silently truncated, so they are refused.
	bcryptMax = 72
)

// ErrMalformed reports a stored hash that cannot be parsed.
var ErrMalformed = errors.New("password: malformed hash")

var b64 = base64.RawStdEncoding

// Hash returns the PHC string of password under p.
func Hash(password string, p Params) string {
	salt := make([]byte, saltLen)
	rand.Read(salt)
	key := argon2id.Key([]byte(password), salt, p.Time, p.Memory, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2id.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// Verify reports whether password matches the stored hash, and whether the
// hash should be replaced by one made with current (because it uses other
// parameters or another algorithm).
func Verify(password, hash string, current Params) (ok, rehash bool, err error) {
	if isBcrypt(hash) {
		if len(password) > bcryptMax {
			return false, false, nil
		}
		switch err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)); {
		case err == nil:
			return true, true, nil
		case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
			return false, false, nil
		default:
			return false, false, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	p, salt, want, err := parse(hash)
	if err != nil {
		return false, false, err
	}
	got := argon2id.Key([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	ok = subtle.ConstantTimeCompare(got, want) == 1
	return ok, ok && p != current, nil
}

// Hashes reports whether Verify of password against hash runs the hash
// function: not for bcrypt and an input over its 72 bytes, which Verify
// refuses unhashed.
func Hashes(password, hash string) bool {
	return !isBcrypt(hash) || len(password) <= bcryptMax
}

func isBcrypt(hash string) bool {
	return strings.HasPrefix(hash, "$2a$") || strings.HasPrefix(hash, "$2b$") || strings.HasPrefix(hash, "$2y$")
}

// Current reports whether hash is an argon2id hash made with p: what Hash
// makes now.
func Current(hash string, p Params) bool {
	hp, _, _, err := parse(hash)
	return err == nil && hp == p
}

// parse splits an argon2id PHC string into its parameters, salt and key.
func parse(hash string) (p Params, salt, key []byte, err error) {
	parts := strings.Split(hash, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v=19" {
		return p, nil, nil, ErrMalformed
	}
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, perr := strconv.ParseUint(v, 10, 32)
		if perr != nil || n == 0 {
			return p, nil, nil, ErrMalformed
		}
		switch k {
		case "m":
			p.Memory = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				return p, nil, nil, ErrMalformed
			}
			p.Threads = uint8(n)
		default:
			return p, nil, nil, ErrMalformed
		}
	}
	if p.Memory == 0 || p.Time == 0 || p.Threads == 0 {
		return p, nil, nil, ErrMalformed
	}
	if salt, err = b64.DecodeString(parts[4]); err != nil || len(salt) < 8 {
		return p, nil, nil, ErrMalformed
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) < 16 {
		return p, nil, nil, ErrMalformed
	}
	return p, salt, key, nil
}
