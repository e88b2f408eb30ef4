package password

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

var cheap = Params{Memory: 64, Time: 1, Threads: 1}

func TestHashVerify(t *testing.T) {
	h := Hash("hunter22", cheap)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q is not an argon2id PHC string with the parameters", h)
	}
	if h2 := Hash("hunter22", cheap); h2 == h {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	ok, rehash, err := Verify("hunter22", h, cheap)
	if !ok || rehash || err != nil {
		t.Errorf("Verify(right password) = %v, %v, %v; want true, false, nil", ok, rehash, err)
	}
	ok, _, err = Verify("hunter23", h, cheap)
	if ok || err != nil {
		t.Errorf("Verify(wrong password) = %v, %v; want false, nil", ok, err)
	}
	ok, rehash, _ = Verify("hunter22", h, Params{Memory: 128, Time: 1, Threads: 1})
	if !ok || !rehash {
		t.Errorf("Verify with new parameters = %v, rehash %v; want a match that needs a rehash", ok, rehash)
	}
	if _, rehash, _ = Verify("hunter23", h, Params{Memory: 128, Time: 1, Threads: 1}); rehash {
		t.Error("a wrong password asked for a rehash")
	}
}

func TestVerifyMalformed(t *testing.T) {
	good := Hash("x", cheap)
	parts := strings.Split(good, "$")
	for _, h := range []string{
		"",
		"plain",
		"$argon2i$v=19$m=64,t=1,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=16$m=64,t=1,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=0,t=1,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=64,t=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=64,t=1,p=1,x=2$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=64,t=1,p=300$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=64,t=1,p=1$!!!$" + parts[5],
		"$argon2id$v=19$m=64,t=1,p=1$" + parts[4] + "$",
		"$argon2id$v=19$m=64,t=1,p=1$" + parts[4],
		"$2b$10$short",
	} {
		ok, _, err := Verify("x", h, cheap)
		if ok || !errors.Is(err, ErrMalformed) {
			t.Errorf("Verify(%q) = %v, %v; want false, ErrMalformed", h, ok, err)
		}
	}
}

func TestBcrypt(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("imported 1"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	ok, rehash, err := Verify("imported 1", string(h), cheap)
	if !ok || !rehash || err != nil {
		t.Errorf("Verify(bcrypt) = %v, %v, %v; want a match that needs a rehash", ok, rehash, err)
	}
	if ok, _, _ := Verify("imported 2", string(h), cheap); ok {
		t.Error("a wrong password matched a bcrypt hash")
	}
	// bcrypt reads only 72 bytes; a longer input would match on its
	// prefix, so it is refused.
	long := strings.Repeat("a", 72)
	h, _ = bcrypt.GenerateFromPassword([]byte(long), bcrypt.MinCost)
	if ok, _, _ := Verify(long+"tail", string(h), cheap); ok {
		t.Error("a password over 72 bytes matched a bcrypt hash of its prefix")
	}
}

// TestXCryptoCompatible checks that hashes made here verify with
// golang.org/x/crypto/argon2, and hashes made with it verify here: stored
// hashes stay valid across the change of implementation.
func TestXCryptoCompatible(t *testing.T) {
	p := Params{Memory: 256, Time: 2, Threads: 2}
	h := Hash("hunter22", p)
	_, salt, key, err := parse(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := argon2.IDKey([]byte("hunter22"), salt, p.Time, p.Memory, p.Threads, uint32(len(key))); string(got) != string(key) {
		t.Errorf("x/crypto computes %x for the hash made here, which holds %x", got, key)
	}
	salt = []byte("0123456789abcdef")
	key = argon2.IDKey([]byte("hunter22"), salt, p.Time, p.Memory, p.Threads, 32)
	old := "$argon2id$v=19$m=256,t=2,p=2$" + b64.EncodeToString(salt) + "$" + b64.EncodeToString(key)
	if ok, rehash, err := Verify("hunter22", old, p); !ok || rehash || err != nil {
		t.Errorf("Verify(an x/crypto hash) = %v, %v, %v; want true, false, nil", ok, rehash, err)
	}
}
