package emailpassword

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// SetPassword is for package auth's operators: it sets pw as the
// password of the email and password login of the user userID, once the
// Policy accepts it (refused is its message otherwise, and nothing
// changes). It ends no session: the caller does, as a reset does.
// store.ErrNotFound if the user has no such login.
func (p *Recipe) SetPassword(ctx context.Context, userID, pw string) (refused string, err error) {
	if msg := p.checkNewPassword(p.k.Tenant(ctx), pw); msg != "" {
		return msg, nil
	}
	if _, err := p.operatorLogin(ctx, userID); err != nil {
		return "", err // before the hash, which an unknown user is not worth
	}
	var hash string
	if err := p.withHashSlot(ctx, func() { hash = p.passwords.hash(pw) }); err != nil {
		return "", err
	}
	// The store swaps the hash only if it is still the one read: a change
	// or reset racing this one makes it read again, and the operator's
	// password is the last word.
	for range 3 {
		l, err := p.operatorLogin(ctx, userID)
		if err != nil {
			return "", err
		}
		if err := p.k.Store().UpdatePasswordHash(ctx, userID, l.PasswordHash, hash); !errors.Is(err, store.ErrConflict) {
			return "", err
		}
	}
	return "", store.ErrConflict
}

// operatorLogin is the email and password login of the user userID, or
// store.ErrNotFound.
func (p *Recipe) operatorLogin(ctx context.Context, userID string) (store.Login, error) {
	logins, err := p.k.Store().Logins(ctx, userID)
	if err != nil {
		return store.Login{}, err
	}
	l, ok := passwordLoginOf(logins)
	if !ok {
		return store.Login{}, store.ErrNotFound
	}
	return l, nil
}

// CreateUser is for package auth's operators: it creates a user whose
// first login is email with pw, as a sign-up does, and starts no
// session. badEmail and badPassword are the messages of an address or a
// password the sign-up form would refuse, and then nothing is created;
// store.ErrConflict if the address has a password login already.
func (p *Recipe) CreateUser(ctx context.Context, email, pw string) (u store.User, l store.Login, badEmail, badPassword string, err error) {
	email = address.Normalise(email)
	if badEmail = wire.CheckEmail(email); badEmail != "" {
		return u, l, badEmail, "", nil
	}
	if badPassword = p.checkNewPassword(p.k.Tenant(ctx), pw); badPassword != "" {
		return u, l, "", badPassword, nil
	}
	// A cheap check first, so a taken email costs no hash; CreateUser
	// decides for concurrent ones.
	key := p.k.Tenant(ctx).Key(store.EmailPasswordKey(email))
	if _, err := p.k.Store().Login(ctx, key); err == nil {
		return u, l, "", "", store.ErrConflict
	} else if !errors.Is(err, store.ErrNotFound) {
		return u, l, "", "", err
	}
	var hash string
	if err := p.withHashSlot(ctx, func() { hash = p.passwords.hash(pw) }); err != nil {
		return u, l, "", "", err
	}
	now := p.k.Now().Truncate(time.Millisecond)
	u = store.User{ID: uuid.NewString(), TimeJoined: now}
	l = store.Login{LoginKey: key, ID: u.ID, UserID: u.ID, Email: email, PasswordHash: hash, CreatedAt: now}
	if err := p.k.Store().CreateUser(ctx, u, l); err != nil {
		return store.User{}, store.Login{}, "", "", err
	}
	return u, l, "", "", nil
}
