package emailpassword

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
	"golang.org/x/text/unicode/norm"
)

// upgradeHash replaces a hash made with old parameters. Failure only means
// the upgrade waits for the next sign-in.
func (p *Recipe) upgradeHash(ctx context.Context, l store.Login, pw string) {
	var hash string
	if err := p.withHashSlot(ctx, func() { hash = p.passwords.hash(pw) }); err != nil {
		return
	}
	if err := p.k.Store().UpdatePasswordHash(ctx, l.UserID, l.PasswordHash, hash); err != nil && !errors.Is(err, store.ErrConflict) {
		p.k.Logger().LogAttrs(ctx, slog.LevelWarn, "auth: upgrading a password hash",
			slog.String("user_id", l.UserID), slog.String("error", err.Error()))
	}
}

// withHashSlot runs f, a password hash, once one of the
// Config.MaxConcurrentHashes slots is free. When none is, it
// waits its turn (see waitHashSlot). Only f holds hashing memory: the
// argon2id work area is taken inside it and given back at its end, so
// the requests waiting hold none.
func (p *Recipe) withHashSlot(ctx context.Context, f func()) error {
	select {
	case p.slots <- struct{}{}:
		p.k.ObserveHashWait(0)
	default:
		if err := p.waitHashSlot(ctx); err != nil {
			return err
		}
	}
	defer func() { <-p.slots }()
	f()
	return nil
}

// waitHashSlot waits for a hashing slot behind the requests that came
// before (the runtime wakes the senders blocked on a channel in the order
// they came), until it takes one, Config.HashQueueTimeout passes (then
// kit.ErrOverloaded), or ctx ends, at the request's deadline or when
// its client goes (then ctx's error). Both errors are answered 503 with
// Retry-After.
func (p *Recipe) waitHashSlot(ctx context.Context) error {
	// Real time, not the kernel's Now: this is a wait in this process.
	start := time.Now()
	t := time.NewTimer(p.cfg.HashQueueTimeout)
	defer t.Stop()
	var err error
	select {
	case p.slots <- struct{}{}:
	case <-t.C:
		err = kit.ErrOverloaded
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.k.ObserveHashWait(time.Since(start))
	return err
}

// hasher hashes and verifies passwords; an interface so that a test
// inside the package can count the calls each path makes.
type hasher interface {
	hash(pw string) string
	verify(pw, phc string) (ok, rehash bool, err error)
}

// argon2id is the hasher of every Recipe. It hashes passwords in
// their normalised form (see normalisePassword).
type argon2id struct{ params password.Params }

func (h argon2id) hash(pw string) string { return password.Hash(normalisePassword(pw), h.params) }

// verify checks the normalised password, and, where normalising changed
// it, the password as typed: hashes made before passwords were normalised
// keep working, and are upgraded. Unknown users take the same steps
// against the dummy hash, so the two paths cost the same.
func (h argon2id) verify(pw, phc string) (ok, rehash bool, err error) {
	n := normalisePassword(pw)
	ok, rehash, err = password.Verify(n, phc, h.params)
	if ok || err != nil || n == pw {
		return ok, rehash, err
	}
	ok, _, err = password.Verify(pw, phc, h.params)
	return ok, ok, err
}

// normalisePassword puts a password in Unicode normalisation form KC, as
// NIST SP 800-63B (5.1.1.2) asks: the same password typed where accents
// are composed and where they are not, or with an input method in
// fullwidth mode, is one password. NFKC rather than NFC because the
// compatibility forms (fullwidth digits, ligatures) are what users cannot
// see they typed.
func normalisePassword(pw string) string { return norm.NFKC.String(pw) }

// A Policy checks a new password at sign-up (and password reset). It
// returns nil to accept it, or an error whose message is shown to the
// user as the field error. Sign-in never applies the policy.
type Policy func(password string) error

// DefaultPolicy requires 8 to 99 characters (counted in UTF-16
// units, as browsers count them) with at least one ASCII letter and one
// digit.
func DefaultPolicy(password string) error {
	n := utf16Len(password)
	switch {
	case n < 8:
		return errors.New(msgPasswordShort)
	case n >= 100:
		return errors.New(msgPasswordLong)
	case !strings.ContainsFunc(password, isASCIILetter):
		return errors.New(msgPasswordNoLetter)
	case !strings.ContainsAny(password, "0123456789"):
		return errors.New(msgPasswordNoDigit)
	}
	return nil
}

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// checkNewPassword returns the field error for a password being set, or "".
// The hard length cap holds whatever the policy allows: it bounds hashing.
func (p *Recipe) checkNewPassword(t *kit.Tenant, pw string) string {
	switch {
	case pw == "":
		return wire.MsgFieldNotOptional
	case len(pw) > maxPasswordLen:
		return msgPasswordLong
	case utf8.RuneCountInString(pw) < t.PasswordMinLength:
		return fmt.Sprintf("Password must contain at least %d characters", t.PasswordMinLength)
	}
	if err := p.cfg.Policy(normalisePassword(pw)); err != nil {
		return err.Error()
	}
	return ""
}

// checkCosts keeps, for each kind of stored hash seen lately (bcrypt at a
// cost, argon2id with parameters), about the longest a check takes: an
// upper envelope of the recent checks, which a single slow check on a
// busy machine raises only part of the way. A refused sign-in takes at least the cost of the slowest
// kind, so the kind of a user's hash, and so the user, cannot be told
// from an unknown email by timing.
type checkCosts struct {
	mu    sync.Mutex
	kinds map[string]*checkCost
}

type checkCost struct {
	avg      time.Duration
	lastSeen time.Time
}

const (
	// checkCostMemory is how long a kind of hash not checked since keeps
	// counting.
	checkCostMemory = 20 * time.Minute
	// maxHashKinds bounds the kinds kept: hashes come from the Store,
	// which holds few kinds.
	maxHashKinds = 64
)

// hashKind is the part of a stored hash that decides its cost.
func hashKind(phc string) string {
	if i := strings.LastIndexByte(phc, '$'); strings.HasPrefix(phc, "$argon2id$") && i > 0 {
		if j := strings.LastIndexByte(phc[:i], '$'); j > 0 {
			return phc[:j]
		}
	}
	if len(phc) >= 7 && phc[0] == '$' && phc[1] == '2' {
		return phc[:7] // "$2b$10$"
	}
	return "other"
}

func (c *checkCosts) observe(kind string, d time.Duration, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds == nil {
		c.kinds = make(map[string]*checkCost)
	}
	k := c.kinds[kind]
	if k == nil {
		if len(c.kinds) >= maxHashKinds {
			c.prune(now)
			if len(c.kinds) >= maxHashKinds {
				return
			}
		}
		k = &checkCost{avg: d}
		c.kinds[kind] = k
	}
	// An upper envelope: it rises a quarter of the way to a slower
	// check and falls a thirty-second of the way to a quicker one, so
	// nearly every check of the kind ends under it and is padded to it.
	if d > k.avg {
		k.avg += (d - k.avg) / 4
	} else {
		k.avg += (d - k.avg) / 32
	}
	k.lastSeen = now
}

// floor is the envelope of the slowest kind of hash checked lately.
func (c *checkCosts) floor(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var f time.Duration
	for _, k := range c.kinds {
		if now.Sub(k.lastSeen) < checkCostMemory {
			f = max(f, k.avg)
		}
	}
	return f
}

func (c *checkCosts) prune(now time.Time) {
	for kind, k := range c.kinds {
		if now.Sub(k.lastSeen) >= checkCostMemory {
			delete(c.kinds, kind)
		}
	}
}

// sleep waits for d, or until ctx ends: padding, not work, so it holds no
// hashing slot.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
