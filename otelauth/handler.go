package otelauth

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/latchkit/auth"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Handler wraps h, the auth handler (an *auth.Auth), mounted at
// Config.BasePath: each request is a span, whose context the handler and
// its Store calls and events get. See the package documentation for its
// name and attributes.
func (t *Telemetry) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		kind := internalSpan
		if !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = t.propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			kind = serverSpan
		}
		method, methodAttr := methodOf(r.Method)
		route, ok := t.route(r.URL.Path)
		name := "auth " + method
		if ok {
			name += " " + route
		}
		ctx, span := t.tracer.Start(ctx, name, kind, methodAttr)
		defer span.End()
		if !span.IsRecording() {
			// Sampled out: nothing to add to the span.
			h.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		rs := &routeState{span: span}
		ctx = context.WithValue(ctx, routeKey{}, rs)

		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r.WithContext(ctx))

		code := sw.status()
		attrs := make([]attribute.KeyValue, 1, 4)
		attrs[0] = attribute.Int("http.response.status_code", code)
		switch {
		case code == http.StatusNotFound && ok:
			// The handler answers 404 to paths that are not routes
			// alone, and such a path is the client's word: it stays out.
			span.SetName("auth " + method)
		case ok:
			attrs = append(attrs, attribute.String("http.route", t.base+route))
		}
		if outcome, reason := rs.result(); outcome != "" {
			attrs = append(attrs, keyOutcome.String(outcome))
			if reason != "" {
				attrs = append(attrs, keyReason.String(reason))
			}
		}
		span.SetAttributes(attrs...)
		if code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
	})
}

// The start options of request spans, made once.
var (
	serverSpan   = trace.WithSpanKind(trace.SpanKindServer)
	internalSpan = trace.WithSpanKind(trace.SpanKindInternal)
	methodAttrs  = func() map[string]trace.SpanStartOption {
		attrs := map[string]trace.SpanStartOption{}
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace, otherMethod} {
			attrs[m] = trace.WithAttributes(attribute.String("http.request.method", m))
		}
		return attrs
	}()
)

// route returns the path after the base path as the handler routes it
// (without the SDKs' "/public" tenant), and whether it could be a route:
// one the handler might serve, short and of the characters routes are
// made of.
func (t *Telemetry) route(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, t.base)
	if !ok || rest == "" || rest[0] != '/' {
		return "", false
	}
	if tenant, ok := strings.CutPrefix(rest, "/public/"); ok {
		rest = "/" + tenant
	}
	if len(rest) > 64 {
		return "", false
	}
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '/', c == '-', c == '.', c == '_':
		default:
			return "", false
		}
	}
	return rest, true
}

// otherMethod stands for a method HTTP does not define.
const otherMethod = "_OTHER"

// methodOf is the request's method as a span names it, one of the
// methods of HTTP or _OTHER, and its attribute http.request.method.
func methodOf(m string) (string, trace.SpanStartOption) {
	if o, ok := methodAttrs[m]; ok {
		return m, o
	}
	return otherMethod, methodAttrs[otherMethod]
}

// routeKey is the context key of a request's routeState.
type routeKey struct{}

// routeState is what the events of one request to the handler said,
// for its span.
type routeState struct {
	span trace.Span

	mu      sync.Mutex
	outcome string // the first event's kind
	reason  string // the first reason of an event
}

func (rs *routeState) note(e auth.Event) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.outcome == "" {
		rs.outcome = string(e.Kind)
	}
	if rs.reason == "" {
		rs.reason = string(e.Reason)
	}
}

func (rs *routeState) result() (outcome, reason string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.outcome, rs.reason
}

// statusWriter keeps the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's own methods.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
