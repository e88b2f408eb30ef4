package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/store"
)

// Ban is a user's ban: when it began (At, which BanUser sets), when it
// ends by itself (Until, zero for a ban that lasts until it is lifted),
// the operator's note (Reason, never shown to the user) and who made it
// (By, an operator's user id).
type Ban = store.Ban

// msgBanned answers the sign-in of a banned user, in the reason of the
// recipe's NOT_ALLOWED status, which the SDKs' forms show. It tells no
// more than that: the operator's Reason is for operators.
const msgBanned = "This account is suspended. Please contact support."

// BanUser bans a user: from now until b.Until (for good if it is zero),
// they cannot sign in by any method, and every session of theirs ends at
// once, as RevokeAllSessions ends them, in one step with sign-ins in
// flight. A sign-in of a banned user is refused only once they have
// proved who they are (the right password, a code, a provider's word),
// with the recipe's NOT_ALLOWED status and a reason the SDKs show; to
// anyone else the account answers as any other. Banning again replaces
// the ban. The user's logins, factors and roles stay.
//
// It needs a Store that implements store.Banner, as memstore and
// sqlstore do (otherwise the error matches errors.ErrUnsupported), and
// returns an error matching ErrNotFound if there is no such user.
func (a *Auth) BanUser(ctx context.Context, userID string, b Ban) error {
	bn, err := a.banner()
	if err != nil {
		return err
	}
	b.At = a.cfg.Now().Truncate(time.Millisecond)
	if !b.Until.IsZero() && !b.Until.After(b.At) {
		return fmt.Errorf("auth: a ban must end after it begins (%v); it ends %v", b.At, b.Until)
	}
	handles, err := bn.BanUser(ctx, userID, b)
	if err != nil {
		return err
	}
	for _, h := range handles {
		a.emit(ctx, nil, Event{Kind: EventSessionRevoked, UserID: userID, SessionHandle: h, Operator: b.By})
	}
	a.emit(ctx, nil, Event{Kind: EventUserBanned, UserID: userID, Operator: b.By})
	return nil
}

// UnbanUser lifts a user's ban, if they have one: they sign in again.
// The sessions the ban ended stay ended. by is the operator's user id,
// for the event. Like BanUser, it needs a store.Banner.
func (a *Auth) UnbanUser(ctx context.Context, userID, by string) error {
	bn, err := a.banner()
	if err != nil {
		return err
	}
	lifted, err := bn.UnbanUser(ctx, userID)
	if err != nil {
		return err
	}
	if !lifted.At.IsZero() {
		a.emit(ctx, nil, Event{Kind: EventUserUnbanned, UserID: userID, Operator: by})
	}
	return nil
}

func (a *Auth) banner() (store.Banner, error) {
	b, ok := a.store.(store.Banner)
	if !ok {
		return nil, fmt.Errorf("auth: banning needs a Store that implements store.Banner; %T does not: %w", a.store, errors.ErrUnsupported)
	}
	return b, nil
}

// refuseBanned answers the sign-in of a banned user, who signed in with
// by.
func (a *Auth) refuseBanned(w http.ResponseWriter, r *http.Request, by store.Login, notAllowed string) {
	if notAllowed == "" {
		notAllowed = "SIGN_IN_NOT_ALLOWED"
	}
	a.emit(r.Context(), r, Event{Kind: EventSignInBanned, UserID: by.UserID, Method: by.Method, ThirdPartyID: kit.ProviderOf(by)})
	wire.NotAllowed(w, notAllowed, msgBanned)
}
