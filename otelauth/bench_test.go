package otelauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailpassword"
	"github.com/latchkit/auth/otelauth"
	"github.com/latchkit/auth/store/memstore"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Run with:
//
//	go test -run '^$' -bench . -benchmem -count 6 ./otelauth
//
// and compare with benchstat -col /otel.

// The modes of a benchmark: otelauth off; on, with every span recorded;
// on, with a sampler that records none (as for the requests a ratio
// sampler leaves out).
var benchModes = []string{"off", "on", "unsampled"}

// benchSetup is an Auth for a benchmark, with otelauth installed or not.
type benchSetup struct {
	a *auth.Auth
	// handler is the Auth, wrapped by otelauth's Handler when on.
	handler http.Handler
	// ctx is the context of the application's request: with a span when
	// on, as otelhttp's would be.
	ctx             context.Context
	access, refresh string // header-mode tokens of a fresh session
}

// newBench makes an Auth from cfg on memstore with cheap hashing. Unless
// mode is off, otelauth is installed with the SDK's providers: spans
// batched to an exporter that drops them (a production exporter's queue
// takes them off the request path likewise), metrics to a reader never
// read.
func newBench(b *testing.B, cfg auth.Config, mode string) *benchSetup {
	b.Helper()
	cfg.Store = memstore.New()
	cfg.EmailPassword.Hashing = emailpassword.Hashing{Memory: 64, Iterations: 1, Parallelism: 1}
	cfg.EmailPassword.InsecureWeakHashing = true
	bs := &benchSetup{ctx: context.Background()}
	var tel *otelauth.Telemetry
	if mode != "off" {
		sampler := sdktrace.AlwaysSample()
		if mode == "unsampled" {
			sampler = sdktrace.NeverSample()
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithSampler(sampler))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)); err != nil {
				b.Error(err)
			}
		})
		var err error
		if tel, err = otelauth.New(otelauth.Config{TracerProvider: tp, MeterProvider: mp}); err != nil {
			b.Fatal(err)
		}
		cfg.Store = tel.Store(cfg.Store)
		cfg.Metrics = tel.Metrics()
		cfg.OnEvent = tel.OnEvent(nil)
		ctx, span := tp.Tracer("app").Start(bs.ctx, "GET /api/me")
		b.Cleanup(func() { span.End() })
		bs.ctx = ctx
	}
	var err error
	if bs.a, err = auth.New(cfg); err != nil {
		b.Fatal(err)
	}
	bs.handler = bs.a
	if tel != nil {
		bs.handler = tel.Handler(bs.a)
	}
	req := httptest.NewRequest("POST", "/auth/signup", strings.NewReader(string(authtest.Credentials("bench@example.com", "bench password 1"))))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	bs.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("sign-up: %d %s", rec.Code, rec.Body)
	}
	bs.access, bs.refresh = rec.Header().Get("st-access-token"), rec.Header().Get("st-refresh-token")
	return bs
}

// discard is a ResponseWriter that keeps headers and drops the body, so a
// benchmark measures the handler and not a recorder.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }
func (d *discard) reset()                      { clear(d.h); d.code = http.StatusOK }

// BenchmarkSessionCheck is RequireSession on a valid bearer token seen
// before (the steady state), with otelauth off and on (installed, the
// request in an application's span). A session check starts no span of
// otelauth's; with CheckSessionInStore, its store read is one.
func BenchmarkSessionCheck(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  auth.Config
	}{
		{"HS256", auth.Config{}},
		{"HS256+CheckSessionInStore", auth.Config{CheckSessionInStore: true}},
	} {
		for _, mode := range benchModes {
			b.Run(c.name+"/otel="+mode, func(b *testing.B) {
				bs := newBench(b, c.cfg, mode)
				h := bs.a.RequireSession(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
				req := httptest.NewRequestWithContext(bs.ctx, "GET", "/api/me", nil)
				req.Header.Set("Authorization", "Bearer "+bs.access)
				w := &discard{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					w.reset()
					h.ServeHTTP(w, req)
				}
				if w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
			})
		}
	}
}

// BenchmarkRefresh is a refresh through the handler, with otelauth off
// and on: a span for the request, one for each store call under it, and
// the refresh event on it.
func BenchmarkRefresh(b *testing.B) {
	for _, mode := range benchModes {
		b.Run("otel="+mode, func(b *testing.B) {
			// One session refreshes b.N times: past its allowance.
			limits := auth.RateLimits{SessionRefreshes: auth.Rate{Burst: 1 << 30, Every: time.Nanosecond}}
			bs := newBench(b, auth.Config{RateLimits: limits}, mode)
			refresh := bs.refresh
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				req := httptest.NewRequest("POST", "/auth/session/refresh", nil)
				req.Header.Set("st-auth-mode", "header")
				req.Header.Set("Authorization", "Bearer "+refresh)
				bs.handler.ServeHTTP(w, req)
				if w.code != http.StatusOK {
					b.Fatalf("refresh: %d", w.code)
				}
				refresh = w.h.Get("st-refresh-token")
			}
		})
	}
}
