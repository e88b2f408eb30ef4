package emailpassword

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// testKernel is the kernel as the recipe's own tests need it: a store, a
// clock, JSON bodies and the answers of Fail for the errors the recipe
// hands it. Every step of the kernel's own lets the request through: no
// allowance is spent, account linking refuses nothing, and a password
// that checked out is answered {"status":"OK"} where the kernel would
// start a session. The kernel's own tests, in package auth, cover those
// steps. A method the tests do not reach is the nil kit.Kernel's: it
// panics.
type testKernel struct {
	kit.Kernel
	st store.Store

	mu     sync.Mutex
	failed []error         // what Fail was handed, in order
	waits  []time.Duration // the waits for a hashing slot, in the order they ended
}

func newTestKernel() *testKernel { return &testKernel{st: memstore.New()} }

func (k *testKernel) Store() store.Store   { return k.st }
func (k *testKernel) Now() time.Time       { return time.Now() }
func (k *testKernel) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (k *testKernel) ReadJSON(_ http.ResponseWriter, r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return wire.BadRequest("the request body must be a JSON object")
	}
	return nil
}

// Fail answers as the kernel does: 400 for a bad request, 503 with
// Retry-After for work turned away or a request that ended, 500 else.
func (k *testKernel) Fail(w http.ResponseWriter, _ *http.Request, err error) {
	k.mu.Lock()
	k.failed = append(k.failed, err)
	k.mu.Unlock()
	var bad wire.BadRequest
	switch {
	case errors.As(err, &bad):
		wire.Message(w, http.StatusBadRequest, string(bad))
	case errors.Is(err, kit.ErrOverloaded), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		w.Header().Set("Retry-After", "1")
		wire.Message(w, http.StatusServiceUnavailable, kit.ErrOverloaded.Error())
	default:
		wire.Message(w, http.StatusInternalServerError, "internal error")
	}
}

func (k *testKernel) FirstFactorAllowed(http.ResponseWriter, *http.Request, string) bool { return true }
func (k *testKernel) Tenant(context.Context) *kit.Tenant                                 { return &kit.Tenant{ID: store.PublicTenant} }
func (k *testKernel) SessionTenant(context.Context, kit.Session) *kit.Tenant {
	return &kit.Tenant{ID: store.PublicTenant}
}
func (k *testKernel) FirstFactors(...string)                           {}
func (k *testKernel) Take(context.Context, ...kit.Limit) time.Duration { return 0 }
func (k *testKernel) Client(r *http.Request) string                    { return r.RemoteAddr }
func (k *testKernel) Emit(context.Context, *http.Request, kit.Event)   {}
func (k *testKernel) EmailVerified(context.Context, store.Login)       {}
func (k *testKernel) TakeSignIn(*http.Request, string) (func(kit.AttemptOutcome), time.Duration) {
	return func(kit.AttemptOutcome) {}, 0
}

func (k *testKernel) SignUpAllowed(http.ResponseWriter, *http.Request, string, string, string) bool {
	return true
}

func (k *testKernel) SignedIn(w http.ResponseWriter, _ *http.Request, _ kit.Proven) {
	wire.JSON(w, http.StatusOK, wire.OK)
}

func (k *testKernel) ObserveHashWait(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.waits = append(k.waits, d)
}

func (k *testKernel) failures() []error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.failed)
}

func (k *testKernel) resetWaits() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.waits = nil
}

func (k *testKernel) allWaits() []time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.waits)
}

// cheap is a Config whose hashes take no time worth counting.
var cheap = Config{Hashing: Hashing{Memory: 64, Iterations: 1, Parallelism: 1}, InsecureWeakHashing: true}

// newTestRecipe is the recipe of c on a testKernel, with a Mailer when
// setup says CanMail.
func newTestRecipe(t *testing.T, c Config, setup kit.Setup) (*Recipe, *testKernel) {
	t.Helper()
	k := newTestKernel()
	p, err := New(k, c, setup, Limits{}) // testKernel spends no allowance
	if err != nil {
		t.Fatal(err)
	}
	return p, k
}

// serveRecipe sends body to the recipe's route at path ("/auth/signin"),
// from the client address from, or httptest's if "".
func serveRecipe(ctx context.Context, p *Recipe, from, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if from != "" {
		req.RemoteAddr = from + ":1234"
	}
	rec := httptest.NewRecorder()
	rt, ok := p.Routes()[strings.TrimPrefix(path, "/auth")]
	if !ok {
		rec.Code = http.StatusNotFound
		return rec
	}
	rt.Handle(rec, req)
	return rec
}

// serveCredentials sends the recipe an email and password, as serveRecipe.
func serveCredentials(ctx context.Context, p *Recipe, from, path, email, password string) *httptest.ResponseRecorder {
	body, _ := json.Marshal(map[string]any{"formFields": []map[string]string{
		{"id": "email", "value": email}, {"id": "password", "value": password},
	}})
	return serveRecipe(ctx, p, from, path, string(bytes.TrimSpace(body)))
}
