package otelauth_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/otelauth"
	"github.com/latchkit/auth/store/memstore"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// An Auth with OpenTelemetry: the store, the metrics and the events go
// through otelauth, and the handler is mounted wrapped. A sign-up is a
// span with the store's calls under it; the SDK's in-memory exporter
// stands for the application's.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tel, err := otelauth.New(otelauth.Config{
		// Default: the global providers, otel.SetTracerProvider's.
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
	})
	if err != nil {
		log.Fatal(err)
	}
	a, err := auth.New(auth.Config{
		Store:   tel.Store(memstore.New()),
		Metrics: tel.Metrics(),
		OnEvent: tel.OnEvent(nil), // or wrapping the application's own
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", tel.Handler(a))

	body := `{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"correct horse 1"}]}`
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/auth/signup", strings.NewReader(body)))

	var route sdktrace.ReadOnlySpan
	for _, s := range spans.GetSpans().Snapshots() {
		if !strings.HasPrefix(s.Name(), "auth.store ") {
			route = s
		}
	}
	fmt.Println(route.Name())
	for _, kv := range route.Attributes() {
		fmt.Printf("  %s: %s\n", kv.Key, kv.Value.String())
	}
	for _, e := range route.Events() {
		fmt.Println("  event", e.Name)
	}
	for _, s := range spans.GetSpans() {
		if s.Name == "auth.store CreateSession" && s.Parent.SpanID() == route.SpanContext().SpanID() {
			fmt.Println(s.Name, "under it")
		}
	}
	// Output:
	// auth POST /signup
	//   http.request.method: POST
	//   http.response.status_code: 200
	//   http.route: /auth/signup
	//   auth.outcome: sign_up
	//   event sign_up
	//   event sign_in
	// auth.store CreateSession under it
}
