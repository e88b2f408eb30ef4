package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/otelauth"
	"github.com/latchkit/auth/store"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// parseOTel reads -otel: off (or empty), or stdout.
func parseOTel(s string) (string, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "", "off":
		return "", nil
	case "stdout":
		return s, nil
	}
	return "", fmt.Errorf("-otel %q: want off or stdout", s)
}

// startOTel sets o.tel up as -otel says: with stdout, each span is
// written to w as a line of JSON as it ends, and a traceparent header
// (W3C Trace Context) on a request puts its span in the caller's trace.
// The metrics go to OpenTelemetry's global MeterProvider, which the demo
// leaves unset: they are counted nowhere. stop writes what is left.
func startOTel(o *options, w io.Writer) (stop func(context.Context) error, err error) {
	if o.otel == "" {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	o.tel, err = otelauth.New(otelauth.Config{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	if err != nil {
		return nil, err
	}
	return tp.Shutdown, nil
}

// traceStore is st, its calls traced with -otel.
func traceStore(o options, st store.Store) store.Store {
	if o.tel == nil {
		return st
	}
	return o.tel.Store(st)
}

// metricsOf is the library's metrics with -otel, and none without.
func metricsOf(o options) auth.Metrics {
	if o.tel == nil {
		return nil
	}
	return o.tel.Metrics()
}

// traceEvents is hook, which with -otel first adds each event to the
// span of its request.
func traceEvents(o options, hook func(context.Context, auth.Event)) func(context.Context, auth.Event) {
	if o.tel == nil {
		return hook
	}
	return o.tel.OnEvent(hook)
}

// traceAuth is mux with -otel sending the requests it routes to the
// Auth (the pattern /auth/) through otelauth's Handler; the demo's own
// pages under /auth/ and its other routes are not traced.
func traceAuth(o options, mux *http.ServeMux) http.Handler {
	if o.tel == nil {
		return mux
	}
	traced := o.tel.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == auth.DefaultBasePath+"/" {
			traced.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
