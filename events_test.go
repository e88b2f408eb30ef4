package auth_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// levelRecorder keeps the level of each "auth event" record by kind.
type levelRecorder struct {
	mu     sync.Mutex
	levels map[string]slog.Level
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler            { return h }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "kind" {
			h.mu.Lock()
			h.levels[a.Value.String()] = r.Level
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestEventLogLevels: refreshes, the most frequent event, are logged at
// Debug so that sign-ins and revocations stand out at Info.
func TestEventLogLevels(t *testing.T) {
	rec := &levelRecorder{levels: map[string]slog.Level{}}
	s := authtest.NewServer(t, auth.Config{Logger: slog.New(rec)})
	c, _ := s.SignedIn(authtest.Header)
	if res := c.Refresh(); res.StatusCode != 200 {
		t.Fatalf("refresh: %d", res.StatusCode)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for kind, want := range map[auth.EventKind]slog.Level{
		auth.EventSignUp:  slog.LevelInfo,
		auth.EventSignIn:  slog.LevelInfo,
		auth.EventRefresh: slog.LevelDebug,
	} {
		if got, ok := rec.levels[string(kind)]; !ok || got != want {
			t.Errorf("%s logged at %v (logged: %v), want %v", kind, got, ok, want)
		}
	}
}
