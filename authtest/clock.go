package authtest

import (
	"sync"
	"time"
)

// Clock is a manual clock, for auth.Config.Now: it moves only when told.
// It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock that stands at t until moved.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d: forward, or back if d is negative.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
