package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store"
)

func TestEmailCache(t *testing.T) {
	emails := map[string]string{"u1": "ada@example.com", "u2": "grace@example.com"}
	lookups := 0
	now := time.Unix(1000, 0)
	c := newEmailCache(func(_ context.Context, id string) (string, error) {
		lookups++
		e, ok := emails[id]
		if !ok {
			return "", store.ErrNotFound
		}
		return e, nil
	})
	c.now = func() time.Time { return now }
	c.max = 2
	ctx := context.Background()

	get := func(id, want string, wantLookups int) {
		t.Helper()
		got, err := c.email(ctx, id)
		if err != nil || got != want {
			t.Fatalf("email(%s) = %q, %v; want %q", id, got, err, want)
		}
		if lookups != wantLookups {
			t.Fatalf("after email(%s): %d lookups, want %d", id, lookups, wantLookups)
		}
	}
	get("u1", "ada@example.com", 1)
	get("u1", "ada@example.com", 1) // cached

	// Unknown users are looked up every time: errors are not cached.
	for want := 2; want <= 3; want++ {
		if _, err := c.email(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown user: %v, want ErrNotFound", err)
		}
		if lookups != want {
			t.Fatalf("unknown user: %d lookups, want %d", lookups, want)
		}
	}

	// At the time-to-live the entry is read again.
	now = now.Add(time.Minute - time.Nanosecond)
	get("u1", "ada@example.com", 3)
	now = now.Add(time.Nanosecond)
	get("u1", "ada@example.com", 4)

	// A full cache starts over rather than growing.
	get("u2", "grace@example.com", 5)
	emails["u3"] = "hopper@example.com"
	get("u3", "hopper@example.com", 6)
	if len(c.m) > c.max {
		t.Fatalf("cache holds %d entries, max %d", len(c.m), c.max)
	}
	get("u1", "ada@example.com", 7)
}

// A failed delivery is said where the reset links are printed, not only
// in the log.
func TestMailFailureToldOnStdout(t *testing.T) {
	var out strings.Builder
	tell := tellMailFailures(&out)
	tell(t.Context(), auth.Event{Kind: auth.EventSignIn})
	if out.Len() != 0 {
		t.Errorf("a sign-in printed %q", out.String())
	}
	tell(t.Context(), auth.Event{Kind: auth.EventMailFailed})
	if !strings.Contains(out.String(), "could not be sent") {
		t.Errorf("a mail failure printed %q", out.String())
	}
}
