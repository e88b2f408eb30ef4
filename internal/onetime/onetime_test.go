package onetime

import (
	"crypto/sha256"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, hash := New()
		if !WellFormed(tok) || hash != sha256.Sum256([]byte(tok)) || seen[tok] {
			t.Fatalf("New: %q (well-formed %v), hash matches %v, repeated %v", tok, WellFormed(tok), hash == sha256.Sum256([]byte(tok)), seen[tok])
		}
		seen[tok] = true
	}
	for _, tok := range []string{"", strings.Repeat("a", 42), strings.Repeat("a", 44), strings.Repeat("a", 42) + "=", strings.Repeat("a", 42) + "/"} {
		if WellFormed(tok) {
			t.Errorf("WellFormed(%q) = true", tok)
		}
	}
}
