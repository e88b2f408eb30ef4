package auth_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestDependencies pins what the auth package imports beyond the standard
// library: every user's build pulls these in.
func TestDependencies(t *testing.T) {
	allowed := []string{
		// Third-party sign-in: discovery and ID-token verification
		// (go-oidc), the authorisation code exchange (oauth2).
		"github.com/coreos/go-oidc/v3/oidc",
		"github.com/golang-jwt/jwt/v5",
		"github.com/google/uuid",
		"github.com/latchkit/auth/internal/password",
		"github.com/latchkit/auth/mailer",
		"github.com/latchkit/auth/provider",
		"github.com/latchkit/auth/store",
		"golang.org/x/crypto/argon2",
		"golang.org/x/crypto/bcrypt",
		"golang.org/x/oauth2",
		"golang.org/x/text/transform",
		"golang.org/x/text/unicode/norm",
	}
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		pkg, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				continue // standard library
			}
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which is not on the allowed list", path, imp)
				continue
			}
			if strings.HasPrefix(imp, "github.com/latchkit/auth/") {
				walk(imp)
			}
		}
	}
	walk("github.com/latchkit/auth")
}
