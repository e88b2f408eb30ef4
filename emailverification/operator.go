package emailverification

import (
	"context"
	"time"

	"github.com/latchkit/auth/store"
)

// SendFor is for package auth's operators: it mails a verification link
// for the email of l off the request's path, as its user asking would,
// from the same allowances; or returns how long to wait when one is
// spent, and sends nothing.
func (rc *Recipe) SendFor(ctx context.Context, l store.Login) time.Duration {
	if wait := rc.k.Take(ctx, rc.limits(l)...); wait > 0 {
		return wait
	}
	rc.k.Enqueue(ctx, "verification", func(ctx context.Context) { rc.send(ctx, l) })
	return 0
}
