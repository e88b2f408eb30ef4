package auth_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/latchkit/auth"

// TestDependencies pins what the auth package imports beyond the standard
// library: every user's build pulls these in.
func TestDependencies(t *testing.T) {
	allowed := []string{
		// Third-party sign-in: discovery and ID-token verification
		// (go-oidc), the authorisation code exchange (oauth2).
		"github.com/coreos/go-oidc/v3/oidc",
		"github.com/golang-jwt/jwt/v5",
		"github.com/google/uuid",
		module + "/emailpassword",
		module + "/emailchange",
		module + "/emailverification",
		module + "/passwordless",
		module + "/thirdparty",
		module + "/internal/address",
		module + "/internal/argon2id",
		module + "/internal/gcra",
		module + "/internal/kit",
		module + "/internal/onetime",
		module + "/internal/password",
		module + "/internal/refreshtoken",
		module + "/internal/seal",
		module + "/internal/tokencache",
		module + "/internal/totp",
		module + "/internal/wire",
		module + "/mailer",
		module + "/provider",
		module + "/store",
		// BLAKE2b for argon2id's H0 and H' (internal/argon2id).
		"golang.org/x/crypto/blake2b",
		"golang.org/x/crypto/bcrypt",
		"golang.org/x/oauth2",
		// AVX2 and AVX-512 detection for argon2id, with GODEBUG's cpu.*
		// switches; x/crypto already requires x/sys, so no new module.
		"golang.org/x/sys/cpu",
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
		for _, imp := range nonStandardImports(t, path) {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which is not on the allowed list", path, imp)
				continue
			}
			if strings.HasPrefix(imp, module+"/") {
				walk(imp)
			}
		}
	}
	walk(module)
}

// TestInternalDependencies pins what each package of mechanics behind the
// auth package imports beyond the standard library. None imports another
// (or the auth package), but for password hashing's own hash function: each
// is a mechanism with a small API, tested on its own, that knows nothing of
// Config or of requests.
func TestInternalDependencies(t *testing.T) {
	mechanics := map[string][]string{
		// The generic cell rate algorithm and the memory limiter's
		// bounded table of times.
		module + "/internal/gcra": nil,
		// argon2id (RFC 9106) with the block function in registers and
		// the work area reused; BLAKE2b for H0 and H'; x/sys/cpu to
		// choose the block function on amd64.
		module + "/internal/argon2id": {"golang.org/x/crypto/blake2b", "golang.org/x/sys/cpu"},
		// Password hashing: argon2id, and bcrypt for imported hashes. The
		// one mechanic that imports another: argon2id is its hash function.
		module + "/internal/password": {module + "/internal/argon2id", "golang.org/x/crypto/bcrypt"},
		// The refresh-token layout: a session handle is a UUID, and a
		// token's hash is a store.TokenHash.
		module + "/internal/refreshtoken": {"github.com/google/uuid", module + "/store"},
		// Sealing and vouching for the store's signing-key rows.
		module + "/internal/seal": {module + "/store"},
		// The caches of verified access tokens and live sessions, and
		// the users deleted here.
		module + "/internal/tokencache": nil,
		// TOTP codes (RFC 6238), the standard library's HMAC-SHA-1.
		module + "/internal/totp": nil,
		// Email addresses and phone numbers: Unicode normalisation.
		module + "/internal/address": {"golang.org/x/text/unicode/norm"},
		// The protocol's shared answers and request fields; an email
		// field is checked by internal/address, and the user object is
		// made of the store's records.
		module + "/internal/wire": {module + "/internal/address", module + "/store"},
		// The seam the recipes plug in through: their mail is a
		// mailer.Template, their records the store's.
		module + "/internal/kit": {module + "/internal/address", module + "/mailer", module + "/provider", module + "/store"},
		// One-time tokens, whose hash is a store.TokenHash.
		module + "/internal/onetime": {module + "/store"},
	}
	for _, imp := range nonStandardImports(t, module) {
		if _, ok := mechanics[imp]; strings.HasPrefix(imp, module+"/internal/") && !ok {
			t.Errorf("the auth package imports %s; state here what it may import", imp)
		}
	}
	for path, allowed := range mechanics {
		for _, imp := range nonStandardImports(t, path) {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which is not on its allowed list", path, imp)
			}
		}
	}
}

// nonStandardImports returns the imports of the package path that are not
// in the standard library.
func nonStandardImports(t *testing.T, path string) []string {
	t.Helper()
	pkg, err := build.Import(path, ".", 0)
	if err != nil {
		t.Fatalf("import %s: %v", path, err)
	}
	var imports []string
	for _, imp := range pkg.Imports {
		if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			imports = append(imports, imp)
		}
	}
	return imports
}

// TestPasskeyDependencies pins what package passkey imports: go-webauthn,
// which the auth package never does, so an application without passkeys
// does not build it or its dependencies (CBOR, TPM, msgp, ...).
func TestPasskeyDependencies(t *testing.T) {
	allowed := []string{
		"github.com/go-webauthn/webauthn/protocol",
		"github.com/go-webauthn/webauthn/webauthn",
		"github.com/google/uuid",
	}
	for _, imp := range nonStandardImports(t, module+"/passkey") {
		// What it may import of the module is the seam of every recipe
		// (TestRecipesImportOnlyTheSeam).
		if !strings.HasPrefix(imp, module+"/") && !slices.Contains(allowed, imp) {
			t.Errorf("passkey imports %s, which is not on its allowed list", imp)
		}
	}
	onlyImportedBy(t, "github.com/go-webauthn/", "passkey", module, module+"/authtest")
}

// onlyImportedBy checks that no package of the module that roots import,
// themselves included, imports a path starting with prefix: only package
// owner may.
func onlyImportedBy(t *testing.T, prefix, owner string, roots ...string) {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		for _, imp := range nonStandardImports(t, path) {
			if strings.HasPrefix(imp, prefix) {
				t.Errorf("%s imports %s: only package %s may", path, imp, owner)
			}
			if strings.HasPrefix(imp, module+"/") {
				walk(imp)
			}
		}
	}
	for _, root := range roots {
		walk(root)
	}
}

// TestGRPCDependencies pins what package grpcauth imports: gRPC, which
// the auth package never does (TestDependencies), so an application
// without gRPC does not build it.
func TestGRPCDependencies(t *testing.T) {
	allowed := []string{
		module,
		module + "/store",
		"google.golang.org/grpc",
		"google.golang.org/grpc/codes",
		"google.golang.org/grpc/metadata",
		"google.golang.org/grpc/status",
	}
	for _, imp := range nonStandardImports(t, module+"/grpcauth") {
		if !slices.Contains(allowed, imp) {
			t.Errorf("grpcauth imports %s, which is not on its allowed list", imp)
		}
	}
}

// TestOTelDependencies pins what package otelauth imports: OpenTelemetry's
// API, which the auth package and the stores never import (nor anything
// they import), so an application without OpenTelemetry does not build
// it. The SDK is for the tests and the demo alone.
func TestOTelDependencies(t *testing.T) {
	allowed := []string{
		module,
		module + "/store",
		"go.opentelemetry.io/otel",
		"go.opentelemetry.io/otel/attribute",
		"go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/metric",
		"go.opentelemetry.io/otel/propagation",
		"go.opentelemetry.io/otel/trace",
	}
	for _, imp := range nonStandardImports(t, module+"/otelauth") {
		if !slices.Contains(allowed, imp) {
			t.Errorf("otelauth imports %s, which is not on its allowed list", imp)
		}
	}
	onlyImportedBy(t, "go.opentelemetry.io/", "otelauth",
		module, module+"/store", module+"/store/memstore", module+"/store/sqlstore", module+"/authtest")
}
