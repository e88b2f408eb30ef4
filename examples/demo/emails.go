package main

import (
	"context"
	"sync"
	"time"
)

// emailCache keeps users' emails for a short time, so that /api/me
// verifies the session without touching the database. It is here for
// internal/cmd/loadtest, whose /api/me figure is meant to measure the
// session check rather than a database read (see newMux). An email and
// password user's email never changes; a user who signs in only with a
// provider has the email the provider last reported, which can change at
// a sign-in. The time-to-live bounds how long /api/me shows an old email,
// or a user deleted from the database by hand.
type emailCache struct {
	lookup func(ctx context.Context, userID string) (string, error)
	ttl    time.Duration
	max    int // entries; when full, the cache starts over
	now    func() time.Time

	mu sync.Mutex
	m  map[string]cachedEmail
}

type cachedEmail struct {
	email string
	until time.Time
}

func newEmailCache(lookup func(ctx context.Context, userID string) (string, error)) *emailCache {
	return &emailCache{lookup: lookup, ttl: time.Minute, max: 10000, now: time.Now, m: map[string]cachedEmail{}}
}

// email returns the user's email, from the cache when it is fresh.
// Errors are not cached.
func (c *emailCache) email(ctx context.Context, userID string) (string, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[userID]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.email, nil
	}
	email, err := c.lookup(ctx, userID)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[userID] = cachedEmail{email, now.Add(c.ttl)}
	c.mu.Unlock()
	return email, nil
}
