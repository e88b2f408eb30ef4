// Package otelauth reports what an [auth.Auth] does to OpenTelemetry:
// a span per request to its handler and per Store call, its events on
// those spans, and its metrics as OpenTelemetry instruments.
//
//	tel, err := otelauth.New(otelauth.Config{}) // the global providers
//	a, err := auth.New(auth.Config{
//		Store:   tel.Store(st),
//		Metrics: tel.Metrics(),
//		OnEvent: tel.OnEvent(nil), // or tel.OnEvent(the application's own)
//	})
//	mux.Handle("/auth/", tel.Handler(a))
//
// The package is apart from package auth so that applications without
// OpenTelemetry do not build it.
//
// # Spans
//
// Handler starts a span for each request to the auth routes, named
// "auth " + method + route ("auth POST /signin", "auth POST
// /session/refresh"): a server span whose parent is the trace context of
// the request's headers (read by Config.Propagator), or, when the
// request's context already has a span (the application's otelhttp
// handler, say), an internal span under it. Its attributes:
//
//   - http.request.method: GET, POST, ..., or _OTHER;
//   - http.route: the route with the base path, "/auth/signin"; absent
//     when the path is not a route (a 404);
//   - http.response.status_code; the span's status is Error for a 5xx;
//   - auth.outcome and auth.reason: the kind and the reason of the
//     request's first [auth.Event] (sign_up for a sign-up, which then
//     reports sign_in too; token_theft and token_theft_previous for the
//     theft of a refresh token), when it reports one.
//
// Each event the handler reports (through OnEvent) is also a span event,
// named by its kind (sign_in, refresh, session_refused, ...), with the
// attributes auth.method (a login method or a second factor),
// auth.third_party (a provider's id) and auth.reason, when the event has
// them.
//
// Store wraps a store.Store: each call is a span "auth.store " + method
// ("auth.store RotateRefreshToken"), a child of the span in its context,
// so of the request's span when the handler made the call. Its attribute
// auth.outcome says how the call ended: ok, not_found, conflict,
// token_reused (with auth.reason previous, after_window or stale),
// rate_limited, sessions_ended, email_owned, last_login, wrong_code,
// code_expired, ended (with auth.reason, the store.EndReason), expired,
// unavailable, canceled, deadline_exceeded or error; a rotation retried
// within the reuse window is repeat. The span's status is Error for
// unavailable, deadline_exceeded and error.
//
// # What is never recorded
//
// No span, attribute or event holds a token (access, refresh, reset,
// verification, a passwordless code or link), a password or its hash, an
// email address or phone number, a TOTP secret or code, a recovery code,
// a third party's code or token, a cookie, a request header, the URL's
// query, the client's address or user agent, a store call's arguments,
// or an error's message (a database's error can quote the values of a
// statement). Spans say what happened and how long it took, not to whom:
// they hold no user id and no session handle. The log records of
// auth.Config.Logger, which the library writes with the request's
// context, name the user and the session; a slog handler that adds the
// trace id to records joins the two. The log-hygiene suite of package
// auth runs every flow with this package installed and looks for its
// secrets, and for email addresses, in every span.
//
// # What is not traced
//
// RequireSession, OptionalSession and VerifyToken start no span: a
// protected route is the application's, and the application's own span
// for it (otelhttp's) is where a refusal's session_refused event lands,
// with auth.outcome and auth.reason set on it, since the library reports
// events with the request's context. With
// auth.Config.CheckSessionInStore, the check's Store call is a span under
// it. A session check otherwise costs nothing more with this package
// installed (see BENCHMARKS.md). Calls of the Go API (RevokeSession,
// DeleteUser, ...) report their events on the span of the context they
// are given, if any. Email is sent by a queue of the library's own,
// after the request's answer, with the request's context but not its
// end: the store calls that make an email (the lookup and the code of a
// reset, a verification or a passwordless email) are spans under the
// request's span, ending after it, and so is a mail_failed event.
//
// # Metrics
//
// Metrics implements [auth.Metrics] with three instruments:
//
//   - auth.events, a counter of events by auth.event (the EventKind);
//   - auth.session.refusals, a counter of refused sessions (401s) by
//     auth.reason;
//   - auth.password.hash_wait, a histogram of how long, in seconds, a
//     password hash waited for a free slot.
package otelauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/latchkit/auth"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of the spans and instruments.
const scope = "github.com/latchkit/auth/otelauth"

// Config configures a Telemetry. The zero value uses OpenTelemetry's
// global providers and propagator, and the auth package's default base
// path.
type Config struct {
	// TracerProvider makes the spans. Default otel.GetTracerProvider(),
	// which follows a provider the application sets later with
	// otel.SetTracerProvider.
	TracerProvider trace.TracerProvider

	// MeterProvider makes the instruments of Metrics. Default
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider

	// Propagator reads the trace context of the requests Handler serves.
	// Default otel.GetTextMapPropagator(), which reads nothing until the
	// application sets one, such as
	// otel.SetTextMapPropagator(propagation.TraceContext{}) for the W3C
	// traceparent header.
	Propagator propagation.TextMapPropagator

	// BasePath is the auth.Config.BasePath of the Auth that Handler
	// wraps: the routes in span names are the paths after it. Default
	// auth.DefaultBasePath.
	BasePath string
}

// Telemetry reports an Auth's requests, store calls, events and metrics
// to OpenTelemetry. Make it with New; it is safe for concurrent use, and
// one Telemetry may serve several Auths that share a base path.
type Telemetry struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	base       string
	metrics    *metrics
}

// New checks cfg, fills in its defaults and makes the instruments.
func New(cfg Config) (*Telemetry, error) {
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = otel.GetTextMapPropagator()
	}
	base := strings.TrimRight(cfg.BasePath, "/")
	if cfg.BasePath == "" {
		base = auth.DefaultBasePath
	}
	if !strings.HasPrefix(base, "/") {
		return nil, fmt.Errorf("otelauth: Config.BasePath %q must start with /", cfg.BasePath)
	}
	m, err := newMetrics(cfg.MeterProvider.Meter(scope))
	if err != nil {
		return nil, fmt.Errorf("otelauth: %w", err)
	}
	return &Telemetry{
		tracer:     cfg.TracerProvider.Tracer(scope),
		propagator: cfg.Propagator,
		base:       base,
		metrics:    m,
	}, nil
}

// The attribute keys of spans, span events and instruments.
const (
	keyOutcome    = attribute.Key("auth.outcome")
	keyReason     = attribute.Key("auth.reason")
	keyMethod     = attribute.Key("auth.method")
	keyThirdParty = attribute.Key("auth.third_party")
	keyEvent      = attribute.Key("auth.event")
)

// OnEvent returns a function for auth.Config.OnEvent that adds each event
// to the span of its context and then calls next, if not nil: the span
// of the request to the handler, or of the application's request around
// a protected route. The span of a request that Handler serves gets the
// first event's kind and reason as auth.outcome and auth.reason; another
// span gets those of each event, the last one staying.
func (t *Telemetry) OnEvent(next func(context.Context, auth.Event)) func(context.Context, auth.Event) {
	return func(ctx context.Context, e auth.Event) {
		t.addEvent(ctx, e)
		if next != nil {
			next(ctx, e)
		}
	}
}

func (t *Telemetry) addEvent(ctx context.Context, e auth.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	if e.Method != "" {
		attrs = append(attrs, keyMethod.String(e.Method))
	}
	if e.ThirdPartyID != "" {
		attrs = append(attrs, keyThirdParty.String(e.ThirdPartyID))
	}
	if e.Reason != "" {
		attrs = append(attrs, keyReason.String(string(e.Reason)))
	}
	span.AddEvent(string(e.Kind), trace.WithAttributes(attrs...))
	if rs, ok := ctx.Value(routeKey{}).(*routeState); ok && rs.span.SpanContext().SpanID() == span.SpanContext().SpanID() {
		rs.note(e)
		return
	}
	span.SetAttributes(keyOutcome.String(string(e.Kind)))
	if e.Reason != "" {
		span.SetAttributes(keyReason.String(string(e.Reason)))
	}
}

// Metrics returns an auth.Metrics for auth.Config.Metrics that records
// to the instruments the package documentation lists.
func (t *Telemetry) Metrics() auth.Metrics { return t.metrics }

// metrics implements auth.Metrics.
type metrics struct {
	events   metric.Int64Counter
	refusals metric.Int64Counter
	hashWait metric.Float64Histogram
	// The attribute sets of the kinds and reasons seen, made once each:
	// both are few, fixed by the library.
	kinds   sync.Map // auth.EventKind → metric.MeasurementOption
	reasons sync.Map // auth.Reason → metric.MeasurementOption
}

func newMetrics(m metric.Meter) (*metrics, error) {
	events, err1 := m.Int64Counter("auth.events",
		metric.WithDescription("Authentication events, by kind (auth.event)."),
		metric.WithUnit("{event}"))
	refusals, err2 := m.Int64Counter("auth.session.refusals",
		metric.WithDescription("Sessions refused (401) by the refresh endpoint or a protected route, by reason (auth.reason)."),
		metric.WithUnit("{refusal}"))
	hashWait, err3 := m.Float64Histogram("auth.password.hash_wait",
		metric.WithDescription("How long a password hash waited for a free slot."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return &metrics{events: events, refusals: refusals, hashWait: hashWait}, nil
}

func (m *metrics) CountEvent(kind auth.EventKind) {
	m.events.Add(context.Background(), 1, attributeSet(&m.kinds, kind, keyEvent))
}

func (m *metrics) CountRefusal(reason auth.Reason) {
	m.refusals.Add(context.Background(), 1, attributeSet(&m.reasons, reason, keyReason))
}

func (m *metrics) ObserveHashWait(d time.Duration) {
	m.hashWait.Record(context.Background(), d.Seconds())
}

// attributeSet returns the measurement option of one attribute, key with
// the value v, from cache or made and cached.
func attributeSet[V ~string](cache *sync.Map, v V, key attribute.Key) metric.MeasurementOption {
	if o, ok := cache.Load(v); ok {
		return o.(metric.MeasurementOption)
	}
	o, _ := cache.LoadOrStore(v, metric.WithAttributeSet(attribute.NewSet(key.String(string(v)))))
	return o.(metric.MeasurementOption)
}
