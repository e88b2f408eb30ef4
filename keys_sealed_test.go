package auth_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/internal/sqltest"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
	"github.com/latchkit/auth/store/sqlstore"
)

// plantKey adds a key in the clear, as someone who can write to the key
// table but has not the secret would, and returns its id and material.
// The id is 12 bytes of base64, so that a refresh token can name it.
func plantKey(t *testing.T, st store.Store, alg string, now time.Time, verifyFor time.Duration) (string, []byte) {
	t.Helper()
	id, material := make([]byte, 12), make([]byte, 32)
	rand.Read(id)
	rand.Read(material)
	sk := store.SigningKey{
		ID: base64.RawURLEncoding.EncodeToString(id), Algorithm: alg, Material: material,
		CreatedAt: now, SignUntil: now.Add(verifyFor / 2), VerifyUntil: now.Add(verifyFor),
	}
	if err := st.AddSigningKey(t.Context(), sk); err != nil {
		t.Fatalf("planting a key: %v", err)
	}
	return sk.ID, material
}

// forgeAccess signs, with an HS256 key, the claims of a genuine access
// token under a made-up session handle, issued at now for an hour.
func forgeAccess(t *testing.T, genuine, kid string, key []byte, now time.Time) string {
	t.Helper()
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(genuine, claims); err != nil {
		t.Fatal(err)
	}
	claims["sessionHandle"] = uuid.NewString()
	claims["iat"] = now.Unix()
	claims["exp"] = now.Add(time.Hour).Unix()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forgeRefresh makes, with a refresh key, a refresh token of the session
// of a genuine one at the given generation (see sealRefreshRaw).
func forgeRefresh(t *testing.T, genuine, kid string, key []byte, generation uint64) string {
	t.Helper()
	raw := sealRefreshRaw(t, genuine)
	id, err := base64.RawURLEncoding.DecodeString(kid)
	if err != nil || len(id) != 12 {
		t.Fatalf("refresh key id %q is not 12 bytes of base64", kid)
	}
	copy(raw[1:13], id)
	binary.BigEndian.PutUint64(raw[1+12+16:], generation)
	m := hmac.New(sha256.New, key)
	m.Write([]byte("latchkit/auth refresh token\x00"))
	m.Write(raw[:sealRefreshMACAt])
	copy(raw[sealRefreshMACAt:], m.Sum(nil)[:16])
	return base64.RawURLEncoding.EncodeToString(raw)
}

// wantForgedRefused checks that neither a forged access token nor a
// forged refresh token opens anything on s.
func wantForgedRefused(t *testing.T, s *authtest.Server, what, access, refresh string) {
	t.Helper()
	c := s.NewClient(authtest.Header)
	if access != "" {
		c.SetTokens(access, "")
		if res := c.Get("/api/session"); res.StatusCode != http.StatusUnauthorized || res.Header.Get(auth.ReasonHeader) != string(auth.ReasonInvalid) {
			t.Errorf("%s: an access token of a key planted in the clear: %d %s, want 401 invalid", what, res.StatusCode, res.Body)
		}
	}
	if refresh != "" {
		c.SetTokens("", refresh)
		if res := c.Refresh(); res.StatusCode != http.StatusUnauthorized || res.Header.Get(auth.ReasonHeader) != string(auth.ReasonInvalid) {
			t.Errorf("%s: a refresh token of a key planted in the clear: %d %s, want 401 invalid", what, res.StatusCode, res.Body)
		}
	}
}

// With a secret, a key written in the clear after the store was sealed
// verifies nothing: an access token it signs for a real user under a
// made-up session is refused, and a refresh token it makes for a real
// session neither opens nor ends that session, on an instance running
// when the key appeared and on one started after. Without a secret the
// same forgeries work, which shows they are faithful.
func TestSealedStoreRefusesPlantedClearKeys(t *testing.T) {
	for _, secrets := range [][]string{{sealSecret(t)}, nil} {
		name := "sealed"
		if secrets == nil {
			name = "without secrets"
		}
		t.Run(name, func(t *testing.T) {
			st := memstore.New()
			clock := authtest.NewClock(authtest.Start)
			cfg := sealConfig(st, clock, secrets...)
			running := authtest.NewServer(t, cfg)
			victim, u := running.SignedIn(authtest.Header)
			access, first := victim.Tokens()
			sealWantRefresh(t, victim, "the victim's first refresh") // first is now superseded

			kid, key := plantKey(t, st, auth.HS256, clock.Now(), 48*time.Hour)
			rkid, rkey := plantKey(t, st, "refresh", clock.Now(), 48*time.Hour)
			forged := forgeAccess(t, access, kid, key, clock.Now())
			forgedRefresh := forgeRefresh(t, first, rkid, rkey, 0)
			restarted := authtest.NewServer(t, cfg)

			if secrets == nil {
				c := restarted.NewClient(authtest.Header)
				c.SetTokens(forged, "")
				if res := c.Get("/api/session"); res.StatusCode != http.StatusOK || res.JSON["userId"] != u.ID {
					t.Fatalf("a forged access token without secrets: %d %s, want 200 as the victim", res.StatusCode, res.Body)
				}
				c.SetTokens("", forgedRefresh)
				wantRefusal(t, c.Refresh(), "token theft detected", auth.ReasonTheftPrevious)
				return
			}
			clock.Advance(2 * time.Second) // past the limit on reloads for unknown key ids
			wantForgedRefused(t, running, "an instance running when the keys were planted", forged, forgedRefresh)
			wantForgedRefused(t, restarted, "an instance started after", forged, forgedRefresh)
			sealWantRefresh(t, victim, "the victim's session after the forgeries")
			sealWantSession(t, victim, "the victim's session after the forgeries")
		})
	}
}

// signedUpAs signs up email on s, which shares its store with a server
// that made the fixtures' emails, and returns the client holding the
// session.
func signedUpAs(t *testing.T, s *authtest.Server, email string) *authtest.Client {
	t.Helper()
	c := s.NewClient(authtest.Header)
	if res := c.SignUp(email, authtest.Password); res.Status != "OK" {
		t.Fatalf("sign-up of %s: %d %s", email, res.StatusCode, res.Body)
	}
	return c
}

// voucherAlg is the algorithm of the rows that let a key from before the
// secret verify, as the store shows them; a voucher's ID is "vouch."
// and the key's.
const voucherAlg = "vouch"

func vouchers(t *testing.T, st store.Store, now time.Time) []store.SigningKey {
	t.Helper()
	var out []store.SigningKey
	for _, k := range sealKeys(t, st, now) {
		if k.Algorithm == voucherAlg {
			out = append(out, k)
		}
	}
	return out
}

// verifyBearer asks a, as an application's handler would, whether an access
// token opens a session.
func verifyBearer(a *auth.Auth, access string) error {
	r := httptest.NewRequest("GET", "/api/me", nil)
	r.Header.Set("Authorization", "Bearer "+access)
	_, err := a.VerifyRequest(r)
	return err
}

// The keys in the clear when a secret is first set keep verifying the
// sessions they signed, on instances started together and on later ones,
// each instance agreeing on one voucher per key; a key planted after does
// not. A key whose row says it lives ten years is trusted no longer than
// a key made at that moment would live.
func TestClearKeysFromBeforeTheSecret(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	plain := authtest.NewServer(t, sealConfig(st, clock))
	c, u := plain.SignedIn(authtest.Header)
	access, refresh := c.Tokens()
	longKid, longKey := plantKey(t, st, auth.HS256, clock.Now(), 10*365*24*time.Hour)
	clear := len(sealKeys(t, st, clock.Now()))

	cfg := sealConfig(st, clock, sealSecret(t))
	var wg sync.WaitGroup
	started := make([]*auth.Auth, 4)
	errs := make([]error, len(started))
	for i := range started {
		wg.Go(func() { started[i], errs[i] = auth.New(cfg) })
	}
	wg.Wait()
	for i, a := range started {
		if errs[i] != nil {
			t.Fatalf("instance %d of %d started together: %v", i, len(started), errs[i])
		}
		if err := verifyBearer(a, access); err != nil {
			t.Errorf("instance %d: a token of a key from before the secret: %v", i, err)
		}
		if err := verifyBearer(a, forgeAccess(t, access, longKid, longKey, clock.Now())); err != nil {
			t.Errorf("instance %d: a token of the long-lived key from before the secret: %v", i, err)
		}
	}
	if n := len(vouchers(t, st, clock.Now())); n != clear {
		t.Errorf("%d vouchers for %d keys in the clear", n, clear)
	}

	later := authtest.NewServer(t, cfg)
	c2 := later.NewClient(authtest.Header)
	c2.SetTokens(access, refresh)
	sealWantSession(t, c2, "a token of a key from before the secret, on an instance started later")
	sealWantRefresh(t, c2, "a refresh token of a key from before the secret, on an instance started later")
	wantSession(t, c2, u.ID)

	kid, key := plantKey(t, st, auth.HS256, clock.Now(), 48*time.Hour)
	clock.Advance(2 * time.Second)
	wantForgedRefused(t, later, "a key planted after the secret was set", forgeAccess(t, access, kid, key, clock.Now()), "")
	if err := verifyBearer(started[0], forgeAccess(t, access, kid, key, clock.Now())); err == nil {
		t.Error("an instance started with the secret took a key planted after it")
	}

	clock.Advance(cfg.SigningKeyLifetime + auth.DefaultAccessTokenLifetime + time.Minute)
	wantForgedRefused(t, later, "the long-lived key from before the secret, a key's lifetime on",
		forgeAccess(t, access, longKid, longKey, clock.Now()), "")
	sealWantRefresh(t, c2, "the session, on sealed keys by now")
}

// The same on SQLite, whose rows keep times in milliseconds: the keys from
// before the secret verify on an instance started later, a key planted
// after does not.
func TestClearKeysFromBeforeTheSecretSQLite(t *testing.T) {
	st, err := sqlstore.New(sqltest.SQLiteFile(t), sqlstore.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	clock := authtest.NewClock(authtest.Start)
	plain := authtest.NewServer(t, sealConfig(st, clock))
	c, _ := plain.SignedIn(authtest.Header)
	access, refresh := c.Tokens()
	cfg := sealConfig(st, clock, sealSecret(t))
	authtest.NewServer(t, cfg)
	if n := len(vouchers(t, st, clock.Now())); n != 2 {
		t.Fatalf("%d vouchers, want one each for the access-token key and the refresh key", n)
	}
	later := authtest.NewServer(t, cfg)
	c2 := later.NewClient(authtest.Header)
	c2.SetTokens(access, refresh)
	sealWantSession(t, c2, "a token of a key from before the secret")
	sealWantRefresh(t, c2, "a refresh token of a key from before the secret")
	kid, key := plantKey(t, st, auth.HS256, clock.Now(), 48*time.Hour)
	clock.Advance(2 * time.Second)
	wantForgedRefused(t, later, "a key planted after the secret was set", forgeAccess(t, access, kid, key, clock.Now()), "")
}

// tamperedKeys serves the key table of its Store as edit leaves it: what
// someone who can write to the database, without the secret, makes of it.
type tamperedKeys struct {
	store.Store
	mu   sync.Mutex
	edit func([]store.SigningKey) []store.SigningKey
}

func (s *tamperedKeys) SigningKeys(ctx context.Context, now time.Time) ([]store.SigningKey, error) {
	keys, err := s.Store.SigningKeys(ctx, now)
	s.mu.Lock()
	edit := s.edit
	s.mu.Unlock()
	if err != nil || edit == nil {
		return keys, err
	}
	return edit(keys), nil
}

func (s *tamperedKeys) tamper(edit func([]store.SigningKey) []store.SigningKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.edit = edit
}

// forgedVoucher is the voucher an attacker who knows its layout writes in
// the clear for a key: the digest of the key's algorithm, id and
// material, then a time far ahead.
func forgedVoucher(alg, id string, material []byte) []byte {
	b := binary.AppendUvarint([]byte("latchkit/auth clear key voucher v1\x00"), uint64(len(alg)))
	b = append(b, alg...)
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	b = append(b, material...)
	sum := sha256.Sum256(b)
	return binary.BigEndian.AppendUint64(sum[:24], uint64(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()))
}

// Whatever a database writer without the secret does to the key table of
// a store sealed over keys in the clear, a key planted in the clear stays
// refused, on the instance running then and on one started after: the
// vouchers removed (which also ends the sessions of the keys from before
// the secret: nothing tells a removal from a store sealed without them),
// a voucher moved to the planted key's row or forged, in the clear or
// behind a sealed header, or a vouched key's material replaced.
func TestSealedStoreTamperedKeyTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		// edit returns the table as the attacker leaves it, given the
		// id and material of the key they planted.
		edit func(keys []store.SigningKey, kid string, key []byte) []store.SigningKey
		// clearSurvives: the sessions of the keys from before the secret
		// still verify.
		clearSurvives bool
	}{
		{"vouchers removed", func(keys []store.SigningKey, _ string, _ []byte) []store.SigningKey {
			return slices.DeleteFunc(keys, func(k store.SigningKey) bool { return k.Algorithm == voucherAlg })
		}, false},
		{"a voucher moved to the planted key", func(keys []store.SigningKey, kid string, _ []byte) []store.SigningKey {
			for _, k := range keys {
				if k.Algorithm == voucherAlg {
					return append(keys, store.SigningKey{ID: "vouch." + kid, Algorithm: voucherAlg, Material: k.Material, VerifyUntil: k.VerifyUntil})
				}
			}
			panic("no voucher")
		}, true},
		{"a voucher forged in the clear", func(keys []store.SigningKey, kid string, key []byte) []store.SigningKey {
			return append(keys, store.SigningKey{ID: "vouch." + kid, Algorithm: voucherAlg, Material: forgedVoucher(auth.HS256, kid, key),
				VerifyUntil: keys[0].VerifyUntil})
		}, true},
		{"a voucher forged behind a sealed header", func(keys []store.SigningKey, kid string, _ []byte) []store.SigningKey {
			for _, k := range keys {
				if k.Algorithm == voucherAlg {
					forged := bytes.Clone(k.Material)
					rand.Read(forged[13:])
					return append(keys, store.SigningKey{ID: "vouch." + kid, Algorithm: voucherAlg, Material: forged, VerifyUntil: k.VerifyUntil})
				}
			}
			panic("no voucher")
		}, true},
		{"a vouched key's material replaced", func(keys []store.SigningKey, kid string, key []byte) []store.SigningKey {
			for i, k := range keys {
				if k.Algorithm == auth.HS256 && len(k.Material) == 32 {
					keys[i].Material = key
				}
			}
			return keys
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &tamperedKeys{Store: memstore.New()}
			clock := authtest.NewClock(authtest.Start)
			plain := authtest.NewServer(t, sealConfig(st, clock))
			before, _ := plain.SignedIn(authtest.Header)
			oldAccess, _ := before.Tokens()

			cfg := sealConfig(st, clock, sealSecret(t))
			running := authtest.NewServer(t, cfg)
			after := signedUpAs(t, running, "sealed@example.com")
			if len(vouchers(t, st, clock.Now())) == 0 {
				t.Fatal("no vouchers for the keys from before the secret")
			}
			var planted string
			var key []byte
			if tc.name == "a vouched key's material replaced" {
				// The attacker signs with their own material under the
				// vouched key's id.
				planted, key = kid(t, oldAccess), make([]byte, 32)
				rand.Read(key)
			} else {
				planted, key = plantKey(t, st, auth.HS256, clock.Now(), 48*time.Hour)
			}
			st.tamper(func(keys []store.SigningKey) []store.SigningKey { return tc.edit(keys, planted, key) })
			clock.Advance(auth.KeyRefreshInterval + time.Second)

			var logs bytes.Buffer
			var mu sync.Mutex
			cfgLogged := cfg
			cfgLogged.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
			restarted := authtest.NewServer(t, cfgLogged)
			forged := forgeAccess(t, oldAccess, planted, key, clock.Now())
			for _, s := range []*authtest.Server{running, restarted} {
				wantForgedRefused(t, s, "an instance running", forged, "")
				c := s.NewClient(authtest.Header)
				c.SetTokens(oldAccess, "")
				if res := c.Get("/api/session"); (res.StatusCode == http.StatusOK) != tc.clearSurvives {
					t.Errorf("a token of a key from before the secret: %d %s, want it to verify: %v", res.StatusCode, res.Body, tc.clearSurvives)
				}
			}
			sealWantSession(t, after, "a session on sealed keys")
			sealWantRefresh(t, after, "a session on sealed keys")
			mu.Lock()
			defer mu.Unlock()
			if !tc.clearSurvives && !strings.Contains(logs.String(), "keys in the clear in the store are refused") {
				t.Errorf("New logged nothing of the refused keys in the clear:\n%s", logs.String())
			}
		})
	}
}

// A database writer who removes every sealed row, keys and vouchers, to
// make the store look as if it had never been sealed, gets no planted key
// trusted by an instance that has seen it sealed; an instance started
// over such a store does vouch for what it finds, and says in the log
// that this should happen once only.
func TestSealedStoreEmptiedOfSealedRows(t *testing.T) {
	st := &tamperedKeys{Store: memstore.New()}
	clock := authtest.NewClock(authtest.Start)
	plain := authtest.NewServer(t, sealConfig(st, clock))
	before, _ := plain.SignedIn(authtest.Header)
	oldAccess, _ := before.Tokens()
	cfg := sealConfig(st, clock, sealSecret(t))
	var mu sync.Mutex
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	running := authtest.NewServer(t, cfg)
	signedUpAs(t, running, "sealed@example.com")
	const warning = "it means the store's sealed keys were removed"
	mu.Lock()
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("the first start with the secret logged %d warnings of vouching, want 1:\n%s", n, logs.String())
	}
	mu.Unlock()

	st.tamper(func(keys []store.SigningKey) []store.SigningKey {
		return slices.DeleteFunc(keys, func(k store.SigningKey) bool { return bytes.HasPrefix(k.Material, []byte("LKSK")) })
	})
	planted, key := plantKey(t, st, auth.HS256, clock.Now(), 48*time.Hour)
	clock.Advance(auth.KeyRefreshInterval + time.Second)
	wantForgedRefused(t, running, "an instance that has seen the store sealed", forgeAccess(t, oldAccess, planted, key, clock.Now()), "")

	authtest.NewServer(t, cfg)
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), warning); n != 2 {
		t.Errorf("a start over a store emptied of sealed rows logged %d warnings of vouching in all, want 2:\n%s", n, logs.String())
	}
}

// A voucher is never a key: a token naming a voucher's id, signed with
// any bytes of its row, is refused, and the key set served to others
// lists keys only.
func TestVoucherIsNoKey(t *testing.T) {
	st := memstore.New()
	clock := authtest.NewClock(authtest.Start)
	cfg := sealConfig(st, clock)
	cfg.SigningAlgorithm = auth.EdDSA
	plain := authtest.NewServer(t, cfg)
	c, _ := plain.SignedIn(authtest.Header)
	access, _ := c.Tokens()
	// An HS256 key in the clear too, so that a voucher's bytes could be
	// tried as an HS256 key under the voucher's id.
	plantKey(t, st, auth.HS256, clock.Now(), 48*time.Hour)
	cfg.Secrets = []string{sealSecret(t)}
	sealed := authtest.NewServer(t, cfg)
	signedUpAs(t, sealed, "sealed@example.com")

	vs := vouchers(t, st, clock.Now())
	if len(vs) != 3 {
		t.Fatalf("%d vouchers, want 3: the EdDSA, refresh and HS256 keys from before the secret", len(vs))
	}
	clock.Advance(2 * time.Second)
	for _, v := range vs {
		for _, candidate := range sealCandidates(v.Material) {
			wantForgedRefused(t, sealed, "a token under a voucher's id", forgeAccess(t, access, v.ID, candidate, clock.Now()), "")
		}
	}
	res := sealed.NewClient(authtest.Header).Get("/auth/jwt/jwks.json")
	var set struct{ Keys []struct{ Kid string } }
	if err := json.Unmarshal(res.Body, &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("jwks: %d %s, want the EdDSA key from before the secret and the sealed one", res.StatusCode, res.Body)
	}
	for _, k := range set.Keys {
		if strings.HasPrefix(k.Kid, "vouch.") {
			t.Errorf("jwks lists the voucher %s", k.Kid)
		}
	}
}
