package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/latchkit/auth/mailer"
)

// outboxWorkers is how many reset emails are prepared and sent at once.
const outboxWorkers = 4

// outbox sends reset emails off the request path: a bounded queue drained
// by a few workers, with a timeout on each delivery attempt and retries.
// The workers start with the first email, not in New, and stop in Close.
type outbox struct {
	queue    chan string // emails that asked for a reset
	attempts int
	timeout  time.Duration
	backoff  time.Duration

	start   sync.Once
	mu      sync.RWMutex // guards closed against enqueue
	closed  bool
	workers sync.WaitGroup
	stop    context.CancelFunc // aborts deliveries in flight when Close gives up
	ctx     context.Context
}

func newOutbox(size, attempts int, timeout, backoff time.Duration) *outbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &outbox{
		queue: make(chan string, size), attempts: attempts, timeout: timeout, backoff: backoff,
		ctx: ctx, stop: cancel,
	}
}

// enqueue queues a reset email for email. A full queue or a closed Auth
// drops it, loudly: it is logged and reported as EventMailFailed.
func (o *outbox) enqueue(a *Auth, email string) {
	o.start.Do(func() {
		for range outboxWorkers {
			o.workers.Go(func() {
				for email := range o.queue {
					o.send(a, email)
				}
			})
		}
	})
	o.mu.RLock()
	defer o.mu.RUnlock()
	reason := "the auth handler is closed"
	if !o.closed {
		select {
		case o.queue <- email:
			return
		default:
			reason = "the mail queue is full"
		}
	}
	a.cfg.Logger.LogAttrs(o.ctx, slog.LevelError, "auth: reset email dropped", slog.String("reason", reason))
	a.emit(o.ctx, nil, Event{Kind: EventMailFailed})
}

// send prepares and sends one reset email. A panic in the Store or the
// Mailer loses this email, reported like any failure, and not the process:
// a worker goroutine has no net/http recovery above it.
func (o *outbox) send(a *Auth, email string) {
	defer func() {
		if p := recover(); p != nil {
			// Only the type: a panic value may quote the message, link
			// and token included.
			a.cfg.Logger.LogAttrs(o.ctx, slog.LevelError, "auth: reset email not sent",
				slog.String("step", "panic"), slog.String("error", fmt.Sprintf("panic: %T", p)))
			a.emit(o.ctx, nil, Event{Kind: EventMailFailed})
		}
	}()
	a.sendResetEmail(o.ctx, email)
}

// deliver sends m, retrying failed attempts with a growing pause.
func (o *outbox) deliver(ctx context.Context, m mailer.Mailer, msg mailer.Message) error {
	var err error
	pause := o.backoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, o.timeout)
		err = m.Send(actx, msg)
		cancel()
		if err == nil || attempt == o.attempts || errors.Is(err, mailer.ErrInvalidMessage) {
			return err
		}
		select {
		case <-time.After(pause):
			pause *= 2
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		}
	}
}
