package totp

import (
	"strings"
	"testing"
	"time"
)

// The SHA-1 test vectors of RFC 6238 appendix B, whose secret is the
// ASCII of "12345678901234567890", with 8 digits; the 6-digit codes are
// their last six.
var vectors = []struct {
	unix int64
	code string
}{
	{59, "94287082"},
	{1111111109, "07081804"},
	{1111111111, "14050471"},
	{1234567890, "89005924"},
	{2000000000, "69279037"},
	{20000000000, "65353130"},
}

var rfcSecret = []byte("12345678901234567890")

func TestCodeRFC6238(t *testing.T) {
	for _, v := range vectors {
		step := Step(time.Unix(v.unix, 0), 30*time.Second)
		if got := Code(rfcSecret, step, 8); got != v.code {
			t.Errorf("Code at %d, 8 digits = %s, want %s", v.unix, got, v.code)
		}
		if got := Code(rfcSecret, step, 6); got != v.code[2:] {
			t.Errorf("Code at %d, 6 digits = %s, want %s", v.unix, got, v.code[2:])
		}
	}
}

func TestMatchSkew(t *testing.T) {
	now := time.Unix(1111111111, 0)
	step := Step(now, 30*time.Second)
	for d := int64(-2); d <= 2; d++ {
		code := Code(rfcSecret, step+d, 6)
		got, ok := Match(rfcSecret, code, now, 30*time.Second, 1, 6)
		want := d >= -1 && d <= 1
		if ok != want || ok && got != step+d {
			t.Errorf("the code of step now%+d: Match = %d, %v; want step %d, %v", d, got, ok, step+d, want)
		}
	}
	for _, bad := range []string{"", "12345", "1234567", "abcdef", " " + Code(rfcSecret, step, 6)[1:], strings.Repeat("9", 100)} {
		if _, ok := Match(rfcSecret, bad, now, 30*time.Second, 1, 6); ok {
			t.Errorf("Match(%q) = true, want false", bad)
		}
	}
}

func TestSecretAndURI(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if len(a) != SecretSize || string(a) == string(b) {
		t.Fatalf("NewSecret: %x and %x, want two different %d-byte secrets", a, b, SecretSize)
	}
	if got := Encode(rfcSecret); got != "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ" {
		t.Errorf("Encode = %s", got)
	}
	uri := URI("Latch Demo", "kate@example.com", rfcSecret, 30*time.Second, 6)
	want := "otpauth://totp/Latch%20Demo:kate@example.com?digits=6&issuer=Latch+Demo&period=30&secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
	if uri != want {
		t.Errorf("URI =\n%s\nwant\n%s", uri, want)
	}
}
