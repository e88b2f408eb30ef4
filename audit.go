package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/latchkit/auth/store"
)

// AuditConfig turns on the audit log: the security events, recorded in
// the Store for operators to read by user and by actor (Auth.AuditLog).
// Config.OnEvent stays for an application that ships events elsewhere.
//
// Every event is recorded except the routine ones: a refresh, a refused
// or throttled refresh, a 401 of a protected route (EventRefresh,
// EventRefreshThrottled, EventSessionRefused). An entry holds what the
// Event holds, which is never a secret: who (the user, and the operator
// who acted, if any), what, when, and the client's address and
// User-Agent. Entries are written off the request path, in batches, a
// few milliseconds after the event; Auth.AuditLog first writes what this
// instance has pending, and Close writes the rest. An entry whose write
// fails is logged at Error and lost, as the event has happened; so is
// one that finds 1,024 entries waiting for a second (a store in an
// outage), rather than hold up the request it came from.
type AuditConfig struct {
	// Enabled turns the audit log on. The Store must implement
	// store.AuditLog, as memstore and sqlstore do; New fails otherwise.
	Enabled bool
	// Keep is how long an entry is kept: entries older than this are
	// removed, at start and then hourly. Default 90 days.
	Keep time.Duration
}

func (c *AuditConfig) setDefaults(s store.Store) error {
	if !c.Enabled {
		return nil
	}
	if _, ok := s.(store.AuditLog); !ok {
		return fmt.Errorf("auth: Config.Audit needs a Store that implements store.AuditLog; %T does not", s)
	}
	if c.Keep < 0 {
		return fmt.Errorf("auth: Config.Audit.Keep is negative (%v)", c.Keep)
	}
	setDefault(&c.Keep, DefaultAuditKeep)
	return nil
}

// DefaultAuditKeep is how long the audit log keeps an entry by default.
const DefaultAuditKeep = 90 * 24 * time.Hour

// audited reports whether events of kind go to the audit log.
func audited(kind EventKind) bool {
	switch kind {
	case EventRefresh, EventRefreshThrottled, EventSessionRefused:
		return false
	}
	return true
}

// auditEntry is e as the audit log keeps it. The actor is the operator
// who acted; else, for an event of a request (ofRequest), the user who
// sent it; else no one: the application's own call of the Go API.
func auditEntry(e *Event, ofRequest bool) store.AuditEntry {
	actor := e.Operator
	if actor == "" && ofRequest {
		actor = e.UserID
	}
	return store.AuditEntry{Time: e.Time, Kind: string(e.Kind), UserID: e.UserID, Actor: actor,
		SessionHandle: e.SessionHandle, Method: e.Method, ThirdPartyID: e.ThirdPartyID, Reason: string(e.Reason),
		Role: e.Role, RemoteAddr: e.RemoteAddr, UserAgent: e.UserAgent}
}

// AuditLog returns a page of the audit log, newest first: the entries of
// q.UserID, or by q.Actor, or all, from the cursor q.After (see
// store.AuditQuery). It first writes the entries this instance has
// pending, so that what happened before the call is there. Without
// Config.Audit it returns an error matching errors.ErrUnsupported.
func (a *Auth) AuditLog(ctx context.Context, q store.AuditQuery) (store.AuditPage, error) {
	if a.audit == nil {
		return store.AuditPage{}, fmt.Errorf("auth: the audit log is off (Config.Audit): %w", errors.ErrUnsupported)
	}
	if err := a.audit.flush(ctx); err != nil {
		return store.AuditPage{}, err
	}
	return a.audit.log.ListAudit(ctx, q)
}

// auditBatch is the most entries written in one statement.
const auditBatch = 256

// auditWriter writes audit entries in batches, off the request path.
type auditWriter struct {
	log    store.AuditLog
	keep   time.Duration
	now    func() time.Time
	logger *slog.Logger

	queue   chan store.AuditEntry
	flushes chan chan struct{}
	done    chan struct{} // closed by close: no more entries are taken
	stopped chan struct{} // closed when the writer has written the rest
	once    sync.Once
}

func newAuditWriter(cfg *Config, log store.AuditLog) *auditWriter {
	w := &auditWriter{log: log, keep: cfg.Audit.Keep, now: cfg.Now, logger: cfg.Logger,
		queue: make(chan store.AuditEntry, 4*auditBatch), flushes: make(chan chan struct{}),
		done: make(chan struct{}), stopped: make(chan struct{})}
	go w.run()
	return w
}

// auditWait is how long an event waits for room in a full queue before
// its entry is dropped: a store that has fallen that far behind (an
// outage) must not hold every request up with it.
const auditWait = time.Second

// add queues an entry, waiting up to auditWait for room; past that, or
// once the Auth is closed, it drops the entry and says so.
func (w *auditWriter) add(e store.AuditEntry) {
	select {
	case w.queue <- e:
		return
	default:
	}
	t := time.NewTimer(auditWait)
	defer t.Stop()
	select {
	case w.queue <- e:
	case <-w.done:
	case <-t.C:
		w.logger.LogAttrs(context.Background(), slog.LevelError, "auth: audit entry dropped: the store is behind",
			slog.String("kind", e.Kind), slog.String("user_id", e.UserID))
	}
}

// flush waits until the entries queued before it are written.
func (w *auditWriter) flush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case w.flushes <- reply:
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close takes no more entries and waits, within ctx, for the rest to be
// written.
func (w *auditWriter) close(ctx context.Context) error {
	w.once.Do(func() { close(w.done) })
	select {
	case <-w.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *auditWriter) run() {
	defer close(w.stopped)
	w.prune()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case e := <-w.queue:
			w.write(e)
		case reply := <-w.flushes:
			w.drain()
			close(reply)
		case <-prune.C:
			w.prune()
		case <-w.done:
			w.drain()
			return
		}
	}
}

// write writes first and whatever else is queued, up to a batch.
func (w *auditWriter) write(first store.AuditEntry) {
	batch := []store.AuditEntry{first}
	for len(batch) < auditBatch {
		select {
		case e := <-w.queue:
			batch = append(batch, e)
			continue
		default:
		}
		break
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.log.AppendAudit(ctx, batch); err != nil {
		w.logger.LogAttrs(ctx, slog.LevelError, "auth: audit entries lost", slog.Int("entries", len(batch)), slog.Any("error", err))
	}
}

// drain writes everything queued.
func (w *auditWriter) drain() {
	for {
		select {
		case e := <-w.queue:
			w.write(e)
		default:
			return
		}
	}
}

func (w *auditWriter) prune() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.log.PruneAudit(ctx, w.now().Add(-w.keep)); err != nil {
		w.logger.LogAttrs(ctx, slog.LevelWarn, "auth: pruning the audit log", slog.Any("error", err))
	}
}
