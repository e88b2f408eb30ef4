package auth_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/store/sqlstore"
)

// sealSecret returns a fresh random secret, as an operator would make one.
func sealSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// sealConfig is a config on st and clock with cheap hashing, for the
// calls to auth.New that do not go through authtest.NewServer.
func sealConfig(st store.Store, clock *authtest.Clock, secrets ...string) auth.Config {
	return auth.Config{
		Store:              st,
		Now:                clock.Now,
		Secrets:            secrets,
		SigningKeyLifetime: 24 * time.Hour,
		EmailPassword: emailpassword.Config{
			Hashing:             emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1},
			InsecureWeakHashing: true,
		},
	}
}

func sealKeys(t *testing.T, st store.Store, now time.Time) []store.SigningKey {
	t.Helper()
	keys, err := st.SigningKeys(t.Context(), now)
	if err != nil || len(keys) == 0 {
		t.Fatalf("SigningKeys: %d keys, %v", len(keys), err)
	}
	return keys
}

// sealCandidates is every key an attacker could take from stored
// material: all of it, and each 32-byte run of it.
func sealCandidates(material []byte) [][]byte {
	out := [][]byte{material}
	for i := 0; i+32 <= len(material); i++ {
		out = append(out, material[i:i+32])
	}
	return out
}

// sealHS256Verifies reports whether key verifies the HS256 signature of
// the JWT tok.
func sealHS256Verifies(t *testing.T, tok string, key []byte) bool {
	t.Helper()
	i := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("not a JWT: %q", tok)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(tok[:i]))
	return hmac.Equal(m.Sum(nil), sig)
}

// The refresh-token layout of internal/refreshtoken: version, key id, handle,
// generation, expiry, secret, then a MAC of all that.
const (
	sealRefreshRawLen = 1 + 12 + 16 + 8 + 8 + 16 + 16
	sealRefreshMACAt  = sealRefreshRawLen - 16
)

func sealRefreshRaw(t *testing.T, tok string) []byte {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) != sealRefreshRawLen {
		t.Fatalf("not a refresh token: %q", tok)
	}
	return raw
}

// sealRefreshVerifies reports whether key makes the MAC of refresh token
// tok: whether it could mint refresh tokens.
func sealRefreshVerifies(t *testing.T, tok string, key []byte) bool {
	t.Helper()
	raw := sealRefreshRaw(t, tok)
	m := hmac.New(sha256.New, key)
	m.Write([]byte("latchkit/auth refresh token\x00"))
	m.Write(raw[:sealRefreshMACAt])
	return hmac.Equal(m.Sum(nil)[:16], raw[sealRefreshMACAt:])
}

// sealRefreshKeyID is the id of the refresh key that made tok.
func sealRefreshKeyID(t *testing.T, tok string) string {
	t.Helper()
	return base64.RawURLEncoding.EncodeToString(sealRefreshRaw(t, tok)[1:13])
}

func sealWantSession(t *testing.T, c *authtest.Client, what string) {
	t.Helper()
	if res := c.Get("/api/session"); res.StatusCode != http.StatusOK {
		t.Fatalf("%s: GET /api/session %d %s, want 200", what, res.StatusCode, res.Body)
	}
}

func sealWantRefresh(t *testing.T, c *authtest.Client, what string) {
	t.Helper()
	if res := c.Refresh(); res.StatusCode != http.StatusOK || !res.IssuedTokens() {
		t.Fatalf("%s: refresh %d %s, want 200 and new tokens", what, res.StatusCode, res.Body)
	}
}

// wantNothingUsable checks that no key material read from the store (the
// rows given as id, algorithm, material) is a clear key, or verifies the
// access token's signature or the refresh token's MAC.
func sealWantNothingUsable(t *testing.T, rows []store.SigningKey, access, refresh string) {
	t.Helper()
	for _, k := range rows {
		if len(k.Material) == 32 {
			t.Errorf("key %s (%s): 32 bytes in the store, a clear key", k.ID, k.Algorithm)
		}
		if !bytes.HasPrefix(k.Material, []byte("LKSK")) {
			t.Errorf("key %s (%s): material without the sealed prefix: %x", k.ID, k.Algorithm, k.Material[:4])
		}
		for _, key := range sealCandidates(k.Material) {
			if sealHS256Verifies(t, access, key) {
				t.Errorf("key %s (%s): bytes read from the store verify an access token", k.ID, k.Algorithm)
			}
			if sealRefreshVerifies(t, refresh, key) {
				t.Errorf("key %s (%s): bytes read from the store make a refresh token's MAC", k.ID, k.Algorithm)
			}
		}
	}
}

// With a secret, the store holds nothing that signs: no clear key, and no
// bytes of any row that verify an access token or make a refresh token's
// MAC, read through the Store or straight from SQLite's column.
func TestSealedKeysUnusableFromStore(t *testing.T) {
	t.Run("memstore", func(t *testing.T) {
		st := memstore.New()
		s := authtest.NewServer(t, auth.Config{Store: st, Secrets: []string{sealSecret(t)}})
		c, _ := s.SignedIn(authtest.Header)
		sealWantSession(t, c, "a session on sealed keys")
		access, refresh := c.Tokens()
		keys := sealKeys(t, st, s.Clock.Now())
		if len(keys) != 2 {
			t.Fatalf("%d keys in the store, want an access-token key and a refresh key", len(keys))
		}
		sealWantNothingUsable(t, keys, access, refresh)
		sealWantRefresh(t, c, "a refresh on sealed keys")
	})

	t.Run("sqlite", func(t *testing.T) {
		db := sqltest.SQLiteFile(t)
		st, err := sqlstore.New(db, sqlstore.SQLite)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		s := authtest.NewServer(t, auth.Config{Store: st, Secrets: []string{sealSecret(t)}})
		c, _ := s.SignedIn(authtest.Cookie)
		sealWantSession(t, c, "a session on sealed keys")
		access, refresh := c.Tokens()
		// What a read of the database alone gives: the raw column.
		rows, err := db.QueryContext(t.Context(), `SELECT id, algorithm, material FROM auth_signing_keys`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var keys []store.SigningKey
		for rows.Next() {
			var k store.SigningKey
			if err := rows.Scan(&k.ID, &k.Algorithm, &k.Material); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 {
			t.Fatalf("%d rows in auth_signing_keys, want 2", len(keys))
		}
		sealWantNothingUsable(t, keys, access, refresh)
		sealWantRefresh(t, c, "a refresh on sealed keys")
	})

	t.Run("EdDSA", func(t *testing.T) {
		st := memstore.New()
		s := authtest.NewServer(t, auth.Config{Store: st, Secrets: []string{sealSecret(t)}, SigningAlgorithm: auth.EdDSA})
		c, _ := s.SignedIn(authtest.Header)
		sealWantSession(t, c, "a session on a sealed Ed25519 key")
		res := c.Get("/auth/jwt/jwks.json")
		var set struct{ Keys []struct{ X string } }
		if err := json.Unmarshal(res.Body, &set); err != nil || len(set.Keys) != 1 {
			t.Fatalf("jwks: %d %s", res.StatusCode, res.Body)
		}
		pub, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
		for _, k := range sealKeys(t, st, s.Clock.Now()) {
			if len(k.Material) == 32 {
				t.Errorf("key %s (%s): 32 bytes in the store, a clear key", k.ID, k.Algorithm)
			}
			for _, seed := range sealCandidates(k.Material)[1:] {
				if bytes.Equal(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), pub) {
					t.Errorf("key %s: an Ed25519 seed read from the store is the signing key", k.ID)
				}
			}
		}
	})
}

// Rotating the secret: sessions of the old secret keep working under
// [new, old], new keys are sealed with the new secret, and the old secret
// can go once every key it sealed has expired, not before.
func TestSecretRotation(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	a, b := sealSecret(t), sealSecret(t)
	cfg := sealConfig(st, clock, a)
	cfg.RefreshTokenLifetime = 48 * time.Hour
	one := authtest.NewServer(t, cfg)
	c, _ := one.SignedIn(authtest.Header)
	oldAccess, _ := c.Tokens()
	keysOfA := map[string]time.Time{} // id: verify until
	for _, k := range sealKeys(t, st, clock.Now()) {
		keysOfA[k.ID] = k.VerifyUntil
	}

	cfg.Secrets = []string{b, a}
	two := authtest.NewServer(t, cfg)
	c2 := two.NewClient(authtest.Header)
	c2.SetTokens(c.Tokens())
	sealWantSession(t, c2, "the old session's access token under [B, A]")
	sealWantRefresh(t, c2, "the old session's refresh under [B, A]")

	// The keys sealed with A stop signing; their replacements are B's.
	clock.Advance(cfg.SigningKeyLifetime + time.Minute)
	sealWantRefresh(t, c2, "a refresh after the A keys stopped signing")
	newAccess, newRefresh := c2.Tokens()
	if _, ok := keysOfA[kid(t, newAccess)]; ok {
		t.Fatal("an access token signed with a key of A after it stopped signing")
	}
	if _, ok := keysOfA[sealRefreshKeyID(t, newRefresh)]; ok {
		t.Fatal("a refresh token made with a key of A after it stopped signing")
	}
	sealWantSession(t, c2, "a token of the new key")

	// Without A, the keys it sealed do not open: New says so.
	if _, err := auth.New(sealConfig(st, clock, b)); err == nil ||
		!strings.Contains(err.Error(), "not in Config.Secrets") || !strings.Contains(err.Error(), "wrong secret") {
		t.Fatalf("New with [B] while keys sealed with A live: %v, want a wrong-secret error", err)
	}

	// Once every key of A has expired, B alone opens everything.
	var last time.Time
	for _, until := range keysOfA {
		if until.After(last) {
			last = until
		}
	}
	clock.Advance(last.Sub(clock.Now()) + time.Second)
	for _, k := range sealKeys(t, st, clock.Now()) {
		if _, ok := keysOfA[k.ID]; ok {
			t.Fatalf("key %s of A still live at %v", k.ID, clock.Now())
		}
	}
	cfg.Secrets = []string{b}
	three := authtest.NewServer(t, cfg)
	c3 := three.NewClient(authtest.Header)
	c3.SetTokens("", newRefresh)
	sealWantRefresh(t, c3, "a refresh on an instance with B alone")
	sealWantSession(t, c3, "a session on an instance with B alone")
	if access, _ := c3.Tokens(); kid(t, access) == kid(t, oldAccess) {
		t.Error("B alone signed with a key of A")
	}
}

// A key sealed with a secret the configuration lacks never signs or
// verifies: New refuses to start, and an instance that started before
// the key appeared refuses sign-ins (500) and its tokens, issuing none.
func TestSecretWrongOrMissing(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	a := sealSecret(t)

	// Instances started on an empty store: New has nothing to check.
	var mu sync.Mutex
	var logs bytes.Buffer
	late := map[string]*authtest.Server{}
	for name, secrets := range map[string][]string{"missing": nil, "wrong": {sealSecret(t)}} {
		cfg := sealConfig(st, clock, secrets...)
		cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
		late[name] = authtest.NewServer(t, cfg)
	}
	sealed := authtest.NewServer(t, sealConfig(st, clock, a))
	c, _ := sealed.SignedIn(authtest.Header)
	access, refresh := c.Tokens()

	for name, want := range map[string]string{"missing": "Config.Secrets is empty", "wrong": "wrong secret"} {
		var secrets []string
		if name == "wrong" {
			secrets = []string{sealSecret(t)}
		}
		if _, err := auth.New(sealConfig(st, clock, secrets...)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s secret: New = %v, want an error saying %q", name, err, want)
		}

		s := late[name]
		res := s.NewClient(authtest.Header).SignUp(name+"@example.com", authtest.Password)
		if res.StatusCode != http.StatusInternalServerError || res.IssuedTokens() {
			t.Errorf("%s secret: sign-up %d %s, issued tokens %v; want 500 and none", name, res.StatusCode, res.Body, res.IssuedTokens())
		}
		other := s.NewClient(authtest.Header)
		other.SetTokens(access, refresh)
		if res := other.Get("/api/session"); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s secret: a token of a sealed key: %d %s, want 401", name, res.StatusCode, res.Body)
		}
		if res := other.Refresh(); res.StatusCode == http.StatusOK || res.IssuedTokens() {
			t.Errorf("%s secret: a refresh with a sealed key: %d %s, want a refusal", name, res.StatusCode, res.Body)
		}
		mu.Lock()
		log := logs.String()
		mu.Unlock()
		if !strings.Contains(log, want) {
			t.Errorf("%s secret: the log does not say %q:\n%s", name, want, log)
		}
	}
	// The instance with the secret is unharmed.
	sealWantSession(t, c, "the session on the instance with the secret")
	sealWantRefresh(t, c, "the session on the instance with the secret")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A sealed blob opens only in its own row: copied to another key id, or
// read back as another kind of key, it fails authentication.
func TestSealBoundToRow(t *testing.T) {
	clock := authtest.NewClock(authtest.Start)
	a := sealSecret(t)
	for _, tc := range []struct {
		name   string
		change func(k store.SigningKey) store.SigningKey
	}{
		{"another id", func(k store.SigningKey) store.SigningKey { k.ID = "copied-" + k.ID; return k }},
		{"another algorithm", func(k store.SigningKey) store.SigningKey {
			if k.Algorithm == auth.HS256 {
				k.Algorithm = auth.EdDSA
			} else {
				k.Algorithm = auth.HS256
			}
			return k
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memstore.New()
			sealed := authtest.NewServer(t, sealConfig(st, clock, a))
			sealed.SignedIn(authtest.Header)
			keys := sealKeys(t, st, clock.Now())
			moved := &rewritingStore{Store: memstore.New(), rewrite: tc.change}
			for _, k := range keys {
				if err := moved.Store.AddSigningKey(t.Context(), k); err != nil {
					t.Fatal(err)
				}
			}
			_, err := auth.New(sealConfig(moved, clock, a))
			if err == nil || !strings.Contains(err.Error(), "copied from another key") {
				t.Fatalf("New over a moved sealed key: %v, want an authentication failure", err)
			}
		})
	}
}

// rewritingStore changes the keys it reads, as an attacker with write
// access to the table could.
type rewritingStore struct {
	store.Store
	rewrite func(store.SigningKey) store.SigningKey
}

func (s *rewritingStore) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	keys, err := s.Store.SigningKeys(ctx, now)
	for i := range keys {
		keys[i] = s.rewrite(keys[i])
	}
	return keys, err
}

// Setting a secret over a store of clear keys: the sessions keep
// working, and the clear keys stop signing at once, replaced by sealed
// ones. Instances still without the secret then cannot start.
func TestSecretOverClearStore(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	plain := authtest.NewServer(t, sealConfig(st, clock))
	c, _ := plain.SignedIn(authtest.Header)
	oldAccess, oldRefresh := c.Tokens()
	clear := map[string]bool{}
	for _, k := range sealKeys(t, st, clock.Now()) {
		if len(k.Material) != 32 {
			t.Fatalf("key %s without a secret: %d bytes, want 32 in the clear", k.ID, len(k.Material))
		}
		clear[k.ID] = true
	}

	sealed := authtest.NewServer(t, sealConfig(st, clock, sealSecret(t)))
	c2 := sealed.NewClient(authtest.Header)
	c2.SetTokens(oldAccess, oldRefresh)
	sealWantSession(t, c2, "a token of a clear key under a secret")
	sealWantRefresh(t, c2, "a refresh token of a clear key under a secret")
	newAccess, newRefresh := c2.Tokens()
	if clear[kid(t, newAccess)] {
		t.Error("an access token signed with a clear key while a secret is set")
	}
	if clear[sealRefreshKeyID(t, newRefresh)] {
		t.Error("a refresh token made with a clear key while a secret is set")
	}
	sealWantSession(t, c2, "a token of the sealed key")
	c3 := sealed.NewClient(authtest.Cookie)
	if res := c3.SignUp("second@example.com", authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up under a secret: %d %s", res.StatusCode, res.Body)
	}
	if access, _ := c3.Tokens(); kid(t, access) != kid(t, newAccess) {
		t.Error("a new sign-in does not use the sealed key")
	}
	// The old access token still verifies until it expires.
	c2.SetTokens(oldAccess, "")
	sealWantSession(t, c2, "a token of a clear key after the sealed key took over")

	for _, k := range sealKeys(t, st, clock.Now()) {
		if !clear[k.ID] && len(k.Material) == 32 {
			t.Errorf("key %s made under a secret is in the clear", k.ID)
		}
	}
	if _, err := auth.New(sealConfig(st, clock)); err == nil || !strings.Contains(err.Error(), "Config.Secrets") {
		t.Errorf("New without the secret over sealed keys: %v, want an error naming Config.Secrets", err)
	}
}

// Without Secrets nothing changes: keys are 32 clear bytes, and they are
// the very keys that sign. This also shows the checks of the other tests
// would catch a clear key.
func TestSecretsOffKeysInClear(t *testing.T) {
	st := memstore.New()
	s := authtest.NewServer(t, auth.Config{Store: st})
	c, _ := s.SignedIn(authtest.Header)
	access, refresh := c.Tokens()
	for _, k := range sealKeys(t, st, s.Clock.Now()) {
		if len(k.Material) != 32 {
			t.Fatalf("key %s: %d bytes, want 32 in the clear", k.ID, len(k.Material))
		}
		switch k.Algorithm {
		case auth.HS256:
			if !sealHS256Verifies(t, access, k.Material) {
				t.Error("the clear HS256 key does not verify the access token")
			}
		case "refresh":
			if !sealRefreshVerifies(t, refresh, k.Material) {
				t.Error("the clear refresh key does not make the refresh token's MAC")
			}
		default:
			t.Errorf("key %s: algorithm %q", k.ID, k.Algorithm)
		}
	}
}

// New refuses secrets that are short, plainly not random, or repeated, and
// never repeats a secret in its error.
func TestSecretsConfig(t *testing.T) {
	good := sealSecret(t)
	for _, tc := range []struct {
		name    string
		secrets []string
		want    string
	}{
		{"short", []string{"0123456789abcdef0123456789abcde"}, "at least 32"},
		{"repeated pattern", []string{strings.Repeat("changeme", 4)}, "not random"},
		{"few characters", []string{strings.Repeat("ab", 10) + strings.Repeat("ba", 10) + "abc"}, "not random"},
		{"duplicate", []string{good, good}, "repeats Config.Secrets[0]"},
		{"empty", []string{good, ""}, "Config.Secrets[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := auth.New(auth.Config{Store: memstore.New(), Secrets: tc.secrets})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error saying %q", err, tc.want)
			}
			for _, s := range tc.secrets {
				if s != "" && strings.Contains(err.Error(), s) {
					t.Errorf("the error shows the secret: %v", err)
				}
			}
		})
	}
	hex := make([]byte, 16) // openssl rand -hex 16: 32 characters of 16 kinds
	rand.Read(hex)
	for _, secrets := range [][]string{nil, {good}, {good, sealSecret(t)}, {fmt.Sprintf("%x", hex)}} {
		if _, err := auth.New(sealConfig(memstore.New(), authtest.NewClock(authtest.Start), secrets...)); err != nil {
			t.Errorf("New with %d good secrets: %v", len(secrets), err)
		}
	}
}

// A store that fails at start does not make New fail, secrets or not: the
// keys are read again on first use, as without secrets.
func TestSecretStoreDownAtStart(t *testing.T) {
	clock := authtest.NewClock(authtest.Start)
	for _, secrets := range [][]string{nil, {sealSecret(t)}} {
		st := &flakyKeyStore{Store: memstore.New(), fail: true}
		s := authtest.NewServer(t, sealConfig(st, clock, secrets...))
		st.mu.Lock()
		st.fail = false
		st.mu.Unlock()
		c, _ := s.SignedIn(authtest.Header)
		sealWantSession(t, c, "a session once the store is back")
	}
}

type flakyKeyStore struct {
	store.Store
	mu   sync.Mutex
	fail bool
}

func (s *flakyKeyStore) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return nil, context.DeadlineExceeded
	}
	return s.Store.SigningKeys(ctx, now)
}
