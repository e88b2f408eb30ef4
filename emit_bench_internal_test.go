package auth

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/latchkit/auth/store/memstore"
)

// BenchmarkEmitRefresh is the event of a refresh, with the default logger
// (which discards everything) and no hook.
func BenchmarkEmitRefresh(b *testing.B) {
	a, err := New(Config{Store: memstore.New()})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/auth/session/refresh", nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a.emit(ctx, r, Event{Kind: EventRefresh, UserID: "8c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11", SessionHandle: "0c1f0a9e-7a43-4d33-9f5e-2b1f1f0c9d11"})
	}
}
