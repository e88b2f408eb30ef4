package otelauth_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/otelauth"
	"github.com/latchkit/auth/store/memstore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// rig is an authtest.Server whose Auth has otelauth installed, with the
// SDK's in-memory exporter behind a synchronous processor and a manual
// metric reader.
type rig struct {
	t      *testing.T
	s      *authtest.Server
	tp     *sdktrace.TracerProvider
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func newRig(t *testing.T, cfg auth.Config) *rig {
	t.Helper()
	r := &rig{t: t, spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	tel, err := otelauth.New(otelauth.Config{
		TracerProvider: r.tp,
		MeterProvider:  mp,
		Propagator:     propagation.TraceContext{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	cfg.Store = tel.Store(cfg.Store)
	cfg.Metrics = tel.Metrics()
	cfg.OnEvent = tel.OnEvent(cfg.OnEvent)
	r.s = authtest.NewServer(t, cfg)
	mountTraced(r.s, tel)
	return r
}

// mountTraced mounts the server's Auth wrapped by tel.Handler over the
// handler authtest.NewServer mounted at /auth/: a pattern with a method
// is more specific than one without, so these take the requests of every
// method the tests send.
func mountTraced(s *authtest.Server, tel *otelauth.Telemetry) {
	h := tel.Handler(s.Auth)
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		s.Mux.Handle(m+" /auth/", h)
	}
}

// request is the trace of one request: its route span, the spans under
// it, and every span that ended meanwhile.
type request struct {
	route    tracetest.SpanStub
	children []tracetest.SpanStub
	all      []tracetest.SpanStub
}

// do runs send, which makes one request to the handler, and returns its
// trace. The route span ends once the handler returns, which may be just
// after the client has the answer: do waits for it.
func (r *rig) do(send func()) request {
	r.t.Helper()
	n := len(r.spans.GetSpans())
	send()
	deadline := time.Now().Add(5 * time.Second)
	for {
		all := r.spans.GetSpans()[n:]
		i := slices.IndexFunc(all, isRoute)
		if i >= 0 {
			req := request{route: all[i], all: all}
			for _, s := range all {
				if s.Parent.SpanID() == all[i].SpanContext.SpanID() {
					req.children = append(req.children, s)
				}
			}
			return req
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no route span among %d new spans", len(all))
		}
		time.Sleep(time.Millisecond)
	}
}

// isRoute reports whether s is a request's span, "auth POST /signin",
// and not a store call's, "auth.store Login".
func isRoute(s tracetest.SpanStub) bool { return strings.HasPrefix(s.Name, "auth ") }

// attr returns the value of a span's attribute key, "" if it has none.
func attr(attrs []attribute.KeyValue, key string) string {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// wantRoute checks a route span: its name, kind, attributes and events.
func wantRoute(t *testing.T, req request, name string, code int, outcome, reason string, events ...string) {
	t.Helper()
	s := req.route
	if s.Name != name || s.SpanKind != trace.SpanKindServer {
		t.Errorf("route span %q (%v), want %q (server)", s.Name, s.SpanKind, name)
	}
	route := "/auth" + strings.TrimPrefix(name, "auth POST ")
	for key, want := range map[string]string{
		"http.request.method":       http.MethodPost,
		"http.route":                route,
		"http.response.status_code": fmt.Sprint(code),
		"auth.outcome":              outcome,
		"auth.reason":               reason,
	} {
		if got := attr(s.Attributes, key); got != want {
			t.Errorf("%s: %s = %q, want %q", s.Name, key, got, want)
		}
	}
	var got []string
	for _, e := range s.Events {
		got = append(got, e.Name)
	}
	if !slices.Equal(got, events) {
		t.Errorf("%s: events %v, want %v", s.Name, got, events)
	}
}

// wantStoreCalls checks that every span of a request is its route span
// or a store call under it, and that the calls include these, each with
// its outcome ("RotateRefreshToken=ok").
func wantStoreCalls(t *testing.T, req request, calls ...string) {
	t.Helper()
	var got []string
	for _, s := range req.all {
		if s.SpanContext.SpanID() == req.route.SpanContext.SpanID() {
			continue
		}
		method, ok := strings.CutPrefix(s.Name, "auth.store ")
		if !ok || s.Parent.SpanID() != req.route.SpanContext.SpanID() || s.SpanContext.TraceID() != req.route.SpanContext.TraceID() {
			t.Errorf("span %q (parent %v) is not a store call under %q", s.Name, s.Parent.SpanID(), req.route.Name)
			continue
		}
		got = append(got, method+"="+attr(s.Attributes, "auth.outcome"))
	}
	for _, c := range calls {
		if !slices.Contains(got, c) {
			t.Errorf("%s: store calls %v, want %s among them", req.route.Name, got, c)
		}
	}
}

// wantEventAttr checks an attribute of a route span's event.
func wantEventAttr(t *testing.T, req request, event, key, want string) {
	t.Helper()
	for _, e := range req.route.Events {
		if e.Name == event {
			if got := attr(e.Attributes, key); got != want {
				t.Errorf("%s: event %s: %s = %q, want %q", req.route.Name, event, key, got, want)
			}
			return
		}
	}
	t.Errorf("%s: no event %s", req.route.Name, event)
}

// TestSpans signs up, signs in (with the right password and a wrong
// one), refreshes and replays a superseded refresh token, in each
// transfer mode, and checks each request's spans.
func TestSpans(t *testing.T) {
	t.Parallel()
	for _, m := range authtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, auth.Config{})
			c := r.s.NewClient(m)
			email := "ada-" + m.String() + "@example.com"
			secrets := []string{email, authtest.Password, "wrong horse 2"}
			held := func() {
				access, refresh := c.Tokens()
				secrets = append(secrets, access, refresh, c.FrontToken)
			}

			req := r.do(func() { c.SignUp(email, authtest.Password) })
			wantRoute(t, req, "auth POST /signup", 200, "sign_up", "", "sign_up", "sign_in")
			wantEventAttr(t, req, "sign_up", "auth.method", "emailpassword")
			wantStoreCalls(t, req, "Login=not_found", "CreateUser=ok", "CreateSession=ok")
			held()

			req = r.do(func() { c.SignIn(email, authtest.Password) })
			wantRoute(t, req, "auth POST /signin", 200, "sign_in", "", "sign_in")
			wantStoreCalls(t, req, "UserByLogin=ok", "CreateSession=ok")
			held()

			req = r.do(func() { r.s.NewClient(m).SignIn(email, "wrong horse 2") })
			wantRoute(t, req, "auth POST /signin", 200, "sign_in_failed", "", "sign_in_failed")

			_, r0 := c.Tokens()
			req = r.do(func() { c.Refresh() })
			wantRoute(t, req, "auth POST /session/refresh", 200, "refresh", "", "refresh")
			wantStoreCalls(t, req, "RotateRefreshToken=ok")
			held()
			_, r1 := c.Tokens()

			// The first refresh token again: theft, which ends the session.
			c.SetTokens("", r0)
			req = r.do(func() { c.Refresh() })
			wantRoute(t, req, "auth POST /session/refresh", 401, "token_theft", "token_theft_previous", "token_theft", "session_refused")
			wantEventAttr(t, req, "token_theft", "auth.reason", "token_theft_previous")
			wantStoreCalls(t, req, "RotateRefreshToken=token_reused")
			for _, s := range req.children {
				if s.Name == "auth.store RotateRefreshToken" && attr(s.Attributes, "auth.reason") != "previous" {
					t.Errorf("the rotation that found the theft: %v, want auth.reason previous", s.Attributes)
				}
			}

			// And the refresh token of the session the theft ended.
			c.SetTokens("", r1)
			req = r.do(func() { c.Refresh() })
			wantRoute(t, req, "auth POST /session/refresh", 401, "session_refused", "token_theft", "session_refused")
			wantStoreCalls(t, req, "RotateRefreshToken=ended")

			wantNoSecrets(t, r.spans.GetSpans(), secrets)
		})
	}
}

// spanText is everything a span holds that an exporter sends, but its
// ids and times: name, attributes, events and their attributes, links'
// attributes and status.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	kvs := func(attrs []attribute.KeyValue) {
		for _, a := range attrs {
			fmt.Fprintf(&b, "\n%s=%s", a.Key, a.Value.String())
		}
	}
	b.WriteString(s.Name)
	kvs(s.Attributes)
	for _, e := range s.Events {
		b.WriteString("\n" + e.Name)
		kvs(e.Attributes)
	}
	for _, l := range s.Links {
		kvs(l.Attributes)
	}
	b.WriteString("\n" + s.Status.Description)
	return b.String()
}

// wantNoSecrets looks for each secret, and for any email address, in
// every span.
func wantNoSecrets(t *testing.T, spans tracetest.SpanStubs, secrets []string) {
	t.Helper()
	if len(spans) == 0 {
		t.Fatal("no spans to search")
	}
	for _, s := range spans {
		text := spanText(s)
		for _, secret := range secrets {
			if len(secret) >= 8 && strings.Contains(text, secret) {
				t.Errorf("span %q holds the secret %q:\n%s", s.Name, secret, text)
			}
		}
		if strings.Contains(text, "@") {
			t.Errorf("span %q holds an email address:\n%s", s.Name, text)
		}
	}
}

// TestTraceContext shows a request's span under the trace context of
// its traceparent header, and under the span of its context, when an
// application's middleware made one, as an internal span.
func TestTraceContext(t *testing.T) {
	t.Parallel()
	r := newRig(t, auth.Config{})
	c := r.s.NewClient(authtest.Header)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	c.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	req := r.do(func() { c.SignUp("grace@example.com", authtest.Password) })
	if got := req.route.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("trace id %s, want the traceparent's %s", got, traceID)
	}
	if got := req.route.Parent.SpanID().String(); got != parentID || !req.route.Parent.IsRemote() {
		t.Errorf("parent %s (remote %v), want the traceparent's %s", got, req.route.Parent.IsRemote(), parentID)
	}
	wantStoreCalls(t, req, "CreateSession=ok")

	// An application's span around the handler: the request's span is
	// under it, and the traceparent header, which the application's
	// middleware has read, is not read again.
	tracer := r.tp.Tracer("app")
	var appSpan trace.SpanContext
	r.s.Mux.Handle("POST /app/auth/", http.StripPrefix("/app", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, span := tracer.Start(req.Context(), "app")
		defer span.End()
		appSpan = span.SpanContext()
		r.s.Mux.ServeHTTP(w, req.WithContext(ctx))
	})))
	req = r.do(func() {
		c.Do(http.MethodPost, "/app/auth/signin", authtest.Credentials("grace@example.com", authtest.Password))
	})
	if req.route.Name != "auth POST /signin" || req.route.SpanKind != trace.SpanKindInternal ||
		req.route.Parent.SpanID() != appSpan.SpanID() || req.route.Parent.IsRemote() {
		t.Errorf("route span %q (%v) under %v, want auth POST /signin (internal) under the application's %v",
			req.route.Name, req.route.SpanKind, req.route.Parent.SpanID(), appSpan.SpanID())
	}
}

// TestProtectedRoute shows a session refused by RequireSession reported
// on the span of the application's request: Handler has no part in it.
func TestProtectedRoute(t *testing.T) {
	t.Parallel()
	r := newRig(t, auth.Config{})
	tracer := r.tp.Tracer("app")
	protected := r.s.Auth.RequireSession(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r.s.Mux.Handle("GET /api/traced", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, span := tracer.Start(req.Context(), "GET /api/traced")
		defer span.End()
		protected.ServeHTTP(w, req.WithContext(ctx))
	}))
	c := r.s.NewClient(authtest.Header)
	if res := c.Get("/api/traced"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("got %d %s, want 401", res.StatusCode, res.Body)
	}
	spans := r.spans.GetSpans()
	i := slices.IndexFunc(spans, func(s tracetest.SpanStub) bool { return s.Name == "GET /api/traced" })
	if i < 0 {
		t.Fatalf("no span of the application's request among %d", len(spans))
	}
	s := spans[i]
	if attr(s.Attributes, "auth.outcome") != "session_refused" || attr(s.Attributes, "auth.reason") != "no_token" ||
		len(s.Events) != 1 || s.Events[0].Name != "session_refused" {
		t.Errorf("the application's span: %v, events %v; want auth.outcome session_refused, auth.reason no_token", s.Attributes, s.Events)
	}
}

// TestRoutes shows how requests name their spans: the route without the
// SDKs' tenant, and no route for a path the handler does not serve, nor
// for one that could hold a token; a method HTTP does not define is
// _OTHER.
func TestRoutes(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tel, err := otelauth.New(otelauth.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))})
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	h := tel.Handler(a)
	for _, tc := range []struct {
		method, path string
		name, route  string
		code         int
	}{
		{"POST", "/auth/signout", "auth POST /signout", "/auth/signout", 401},
		{"POST", "/auth/public/signout", "auth POST /signout", "/auth/signout", 401},
		{"GET", "/auth/loginmethods", "auth GET /loginmethods", "/auth/loginmethods", 200},
		{"GET", "/auth/signout", "auth GET /signout", "/auth/signout", 405},
		{"GET", "/auth/no-such-route", "auth GET", "", 404},
		{"GET", "/auth/eyJhbGciOiJIUzI1NiJ9.e30.sig", "auth GET", "", 404},
		{"GET", "/elsewhere", "auth GET", "", 404},
		{"BREW", "/auth/signout", "auth _OTHER /signout", "/auth/signout", 405},
	} {
		n := len(spans.GetSpans())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		got := spans.GetSpans()[n:]
		if len(got) != 1 {
			t.Errorf("%s %s: %d spans, want 1", tc.method, tc.path, len(got))
			continue
		}
		s := got[0]
		if s.Name != tc.name || attr(s.Attributes, "http.route") != tc.route || rec.Code != tc.code ||
			attr(s.Attributes, "http.response.status_code") != fmt.Sprint(tc.code) {
			t.Errorf("%s %s: %d, span %q %v; want %d, %q with http.route %q", tc.method, tc.path, rec.Code, s.Name, s.Attributes, tc.code, tc.name, tc.route)
		}
	}
}

// TestMetrics counts the events and refusals of a sign-up, a refresh and
// a theft, and the hash waits of the sign-up.
func TestMetrics(t *testing.T) {
	t.Parallel()
	r := newRig(t, auth.Config{})
	c := r.s.NewClient(authtest.Header)
	c.SignUp("lin@example.com", authtest.Password)
	_, r0 := c.Tokens()
	c.Refresh()
	c.SetTokens("", r0)
	c.Refresh()

	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var hashWaits uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					for _, kv := range p.Attributes.ToSlice() {
						got[m.Name+" "+kv.Value.String()] += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					hashWaits += p.Count
				}
			}
		}
	}
	want := map[string]int64{
		"auth.events sign_up":                        1,
		"auth.events sign_in":                        1,
		"auth.events refresh":                        1,
		"auth.events token_theft":                    1,
		"auth.events session_refused":                1,
		"auth.session.refusals token_theft_previous": 1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	if hashWaits != 1 {
		t.Errorf("%d hash waits, want the sign-up's", hashWaits)
	}
}

// The work a request leaves to the mail queue is in the request's trace:
// a reset email's store calls are spans under the reset request's span,
// though they run after it has been answered.
func TestMailInRequestTrace(t *testing.T) {
	r := newRig(t, auth.Config{})
	c := r.s.NewClient(authtest.Header)
	c.SignUp("ada@example.com", authtest.Password)
	req := r.do(func() { c.RequestPasswordReset("ada@example.com") })
	r.s.Mailbox.WaitFor(t, 1, 5*time.Second)
	var under []string
	for _, s := range r.spans.GetSpans() {
		if s.Parent.SpanID() == req.route.SpanContext.SpanID() {
			under = append(under, s.Name)
		}
	}
	if !slices.Contains(under, "auth.store CreateCode") {
		t.Errorf("spans under the reset request's: %q, want the reset code's CreateCode", under)
	}
}
