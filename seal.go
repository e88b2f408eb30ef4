package auth

import (
	"context"
	"log/slog"
	"time"

	"github.com/latchkit/auth/internal/seal"
	"github.com/latchkit/auth/store"
)

// keyCheckTimeout bounds how long New waits for the store to say whether
// its keys open.
const keyCheckTimeout = 10 * time.Second

// keyKind names a key of the store in errors.
func keyKind(alg string) string {
	if alg == refreshAlg {
		return "refresh key"
	}
	return "signing key"
}

// checkKeys reads the keys in the store once and reports one that cannot
// be opened with Config.Secrets, so that a wrong or missing secret stops
// the application at start rather than at its first sign-in. The store
// itself failing is not reported: New never needed the store to be up,
// and the keys are read again on first use, where the failure surfaces as
// it always has. With secrets, it vouches for the keys left in the clear
// from before they were set, if this is the first time the store is
// sealed, and logs the clear keys that will not verify.
func (a *Auth) checkKeys() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), keyCheckTimeout)
	defer cancel()
	defer func() {
		// A store that panics is as unreachable as one that errs; the
		// first request meets it again, under the handler's recover.
		if recover() != nil {
			err = nil
		}
	}()
	keys, err := a.store.SigningKeys(ctx, a.cfg.Now())
	if err != nil {
		return nil
	}
	for _, sk := range keys {
		if sk.Algorithm == seal.VoucherAlg {
			// One that does not open vouches for nothing; it stops
			// nothing else (see seal.Sealer.VouchedUntil).
			continue
		}
		if _, _, err := a.keys.seal.Open(sk, keyKind(sk.Algorithm)); err != nil {
			return err
		}
	}
	if !a.keys.seal.On() {
		return nil
	}
	a.vouchAtStart(ctx, keys)
	return nil
}

// vouchAtStart has both keyrings vouch for the keys in the clear, if this
// is the first time the store is sealed, and logs what it did and the
// clear keys that will not verify.
func (a *Auth) vouchAtStart(ctx context.Context, keys []store.SigningKey) {
	now := a.cfg.Now()
	vouched := 0
	for _, k := range []*keyring{a.keys, a.refreshKeys} {
		// A failure to write is tried again at the keyring's next load.
		n, _ := k.vouchLocked(ctx, now, keys)
		vouched += n
	}
	if vouched > 0 {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: Config.Secrets is set over a store of keys in the clear: "+
			"they keep verifying until they expire, and no key written in the clear from now on ever verifies. "+
			"Expected once, when the secret is first set; at a later start it means the store's sealed keys were removed, "+
			"or the store was restored from a backup taken before the secret",
			slog.Int("keys", vouched))
		var err error
		if keys, err = a.store.SigningKeys(ctx, now); err != nil {
			return
		}
	}
	if refused := a.unvouched(keys, now); len(refused) > 0 {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: keys in the clear in the store are refused: with Config.Secrets set, "+
			"only keys that were in the store before anything in it was sealed verify, until they expire",
			slog.Any("key_ids", refused))
	}
}

// unvouched returns the ids of the keys in the clear that no voucher
// lets verify at now.
func (a *Auth) unvouched(keys []store.SigningKey, now time.Time) []string {
	vouchers := seal.Vouchers(keys)
	var refused []string
	for _, sk := range keys {
		if sk.Algorithm == seal.VoucherAlg || seal.Sealed(sk.Material) {
			continue
		}
		if until, ok := a.keys.seal.VouchedUntil(sk, vouchers); !ok || !now.Before(until) {
			refused = append(refused, sk.ID)
		}
	}
	return refused
}
