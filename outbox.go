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

// outboxWorkers is how many emails are prepared and sent at once.
const outboxWorkers = 4

// A mailJob prepares and sends one email: reset or verification.
type mailJob struct {
	kind string // "reset", "verification", "passwordless": names the email in logs
	// ctx is the request's context without its end: its values (a trace)
	// reach the job's store calls and events, and the outbox's end ends it.
	ctx context.Context
	run func(ctx context.Context)
}

// outbox sends emails off the request path: a bounded queue drained by a
// few workers, with a timeout on each delivery attempt and retries. The
// workers start with the first email, not in New, and stop in Close.
type outbox struct {
	queue    chan mailJob
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
		queue: make(chan mailJob, size), attempts: attempts, timeout: timeout, backoff: backoff,
		ctx: ctx, stop: cancel,
	}
}

// enqueue queues an email. A full queue or a closed Auth drops it,
// loudly: it is logged and reported as EventMailFailed.
func (o *outbox) enqueue(a *Auth, job mailJob) {
	o.start.Do(func() {
		for range outboxWorkers {
			o.workers.Go(func() {
				for job := range o.queue {
					o.send(a, job)
				}
			})
		}
	})
	o.mu.RLock()
	defer o.mu.RUnlock()
	reason := "the auth handler is closed"
	if !o.closed {
		select {
		case o.queue <- job:
			return
		default:
			reason = "the mail queue is full"
		}
	}
	a.cfg.Logger.LogAttrs(o.ctx, slog.LevelError, "auth: "+job.kind+" email dropped", slog.String("reason", reason))
	a.emit(o.ctx, nil, Event{Kind: EventMailFailed})
}

// send prepares and sends one email. A panic in the Store or the Mailer
// loses this email, reported like any failure, and not the process: a
// worker goroutine has no net/http recovery above it.
func (o *outbox) send(a *Auth, job mailJob) {
	ctx, cancel := context.WithCancel(job.ctx)
	defer cancel()
	defer context.AfterFunc(o.ctx, cancel)()
	defer func() {
		if p := recover(); p != nil {
			// Only the type: a panic value may quote the message, link
			// and token included.
			a.cfg.Logger.LogAttrs(ctx, slog.LevelError, "auth: "+job.kind+" email not sent",
				slog.String("step", "panic"), slog.String("error", fmt.Sprintf("panic: %T", p)))
			a.emit(ctx, nil, Event{Kind: EventMailFailed})
		}
	}()
	job.run(ctx)
}

// deliver sends m, retrying failed attempts with a growing pause.
func (o *outbox) deliver(ctx context.Context, m mailer.Mailer, msg mailer.Message) error {
	return o.retry(ctx, func(ctx context.Context) error { return m.Send(ctx, msg) })
}

// retry calls send until it succeeds, with a timeout on each attempt and
// a growing pause between them, at most o.attempts times. A message the
// mailer calls invalid is not tried again.
func (o *outbox) retry(ctx context.Context, send func(context.Context) error) error {
	var err error
	pause := o.backoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, o.timeout)
		err = send(actx)
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
