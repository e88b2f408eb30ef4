package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/latchkit/auth/store"
)

// RateLimit implements store.RateLimitStore.
func (s *Store) RateLimit(ctx context.Context, key string) (time.Time, error) {
	var tat int64
	err := s.db.QueryRowContext(ctx, s.q.rateLimit, key).Scan(&tat)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	} else if err != nil {
		return time.Time{}, unavailable(fmt.Errorf("sqlstore: reading a rate limit: %w", err))
	}
	return fromMS(tat), nil
}

// TakeRateLimit implements store.RateLimitStore in one statement.
func (s *Store) TakeRateLimit(ctx context.Context, key string, every time.Duration, burst int, now time.Time) (bool, time.Time, error) {
	n, e := ms(now), every.Milliseconds()
	limit := n + int64(burst-1)*e
	args := []any{key, n + e, n, e, limit}
	if s.dialect == MySQL {
		args = []any{key, n + e, limit, n, e}
	}
	// MariaDB may pick a take racing another on a new key, or the prune
	// below, as a deadlock victim; write retries it.
	var rows int64
	err := s.write(ctx, func(ctx context.Context, q querier) (err error) {
		rows, err = affected(q.ExecContext(ctx, s.q.takeRateLimit, args...))
		return err
	})
	if err != nil {
		return false, time.Time{}, fmt.Errorf("sqlstore: counting an attempt: %w", err)
	}
	s.pruneRateLimits(ctx, n)
	if rows > 0 {
		return true, time.Time{}, nil
	}
	tat, err := s.RateLimit(ctx, key)
	return false, tat, err
}

// pruneRateLimits deletes the rate-limit rows whose time has passed, at
// most once a minute per Store, one call winning the minute. The rows go
// through the index on tat; a failure only leaves them to the next
// minute or to DeleteExpired.
func (s *Store) pruneRateLimits(ctx context.Context, now int64) {
	last := s.limitsPruned.Load()
	if now-last < time.Minute.Milliseconds() || !s.limitsPruned.CompareAndSwap(last, now) {
		return
	}
	s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, s.q.deleteExpiredLimits, now)
		return err
	})
}

// RefundRateLimit implements store.RateLimitStore.
func (s *Store) RefundRateLimit(ctx context.Context, key string, every time.Duration) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, s.q.refundRateLimit, every.Milliseconds(), key)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: giving back an attempt: %w", err)
	}
	return nil
}

// ResetRateLimit implements store.RateLimitStore.
func (s *Store) ResetRateLimit(ctx context.Context, key string) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, s.q.resetRateLimit, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: resetting a rate limit: %w", err)
	}
	return nil
}

// RateLimits implements store.RateLimitStore in one statement.
func (s *Store) RateLimits(ctx context.Context, keys []string) ([]time.Time, error) {
	tats := make([]time.Time, len(keys))
	if len(keys) == 0 {
		return tats, nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	rows, err := s.db.QueryContext(ctx, s.rateLimitsQuery(len(keys)), args...)
	if err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: reading rate limits: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var tat int64
		if err := rows.Scan(&key, &tat); err != nil {
			return nil, unavailable(fmt.Errorf("sqlstore: reading rate limits: %w", err))
		}
		for i, k := range keys {
			if k == key {
				tats[i] = fromMS(tat)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(fmt.Errorf("sqlstore: reading rate limits: %w", err))
	}
	return tats, nil
}

// SpendRateLimits implements store.RateLimitStore in one statement.
func (s *Store) SpendRateLimits(ctx context.Context, spends []store.RateLimitSpend, now time.Time) error {
	if len(spends) == 0 {
		return nil
	}
	// In key order, so that spends racing on the same keys lock their
	// rows in the same order.
	spends = slices.SortedFunc(slices.Values(spends), func(a, b store.RateLimitSpend) int { return strings.Compare(a.Key, b.Key) })
	n := ms(now)
	args := make([]any, 0, 2*len(spends)+1)
	for _, sp := range spends {
		args = append(args, sp.Key, n+sp.Every.Milliseconds())
	}
	args = append(args, n)
	// MariaDB may pick a spend racing another on a new key, or the
	// prune below, as a deadlock victim; write retries it.
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, s.spendRateLimitsQuery(len(spends)), args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: counting attempts: %w", err)
	}
	s.pruneRateLimits(ctx, n)
	return nil
}

// rateLimitsQuery reads the times of n keys.
func (s *Store) rateLimitsQuery(n int) string {
	q := `SELECT limit_key, tat FROM auth_rate_limits WHERE limit_key IN (` + placeholders(n, "?") + `)`
	if s.dialect == Postgres {
		q = rebindQuery(q)
	}
	return q
}

// spendRateLimitsQuery counts an attempt for each of n keys: the new time
// is the later of the recorded one and now, plus the interval, which is
// the inserted time (now plus the interval) plus how far the recorded
// time is past now. Arguments: each key and now plus its interval, then
// now.
func (s *Store) spendRateLimitsQuery(n int) string {
	q := `INSERT INTO auth_rate_limits (limit_key, tat) VALUES ` + placeholders(n, "(?, ?)")
	switch s.dialect {
	case Postgres:
		q = rebindQuery(q + ` ON CONFLICT (limit_key) DO UPDATE SET tat = GREATEST(auth_rate_limits.tat - ?, 0) + excluded.tat`)
	case SQLite:
		q += ` ON CONFLICT (limit_key) DO UPDATE SET tat = max(auth_rate_limits.tat - ?, 0) + excluded.tat`
	case MySQL:
		q += ` ON DUPLICATE KEY UPDATE tat = GREATEST(tat - ?, 0) + VALUES(tat)`
	}
	return q
}

// placeholders repeats p n times, separated by commas.
func placeholders(n int, p string) string {
	return strings.TrimSuffix(strings.Repeat(p+", ", n), ", ")
}
