package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/google/uuid"
	"github.com/latchkit/auth/store"
)

// The SDKs' reasons for refusing a sign-up or sign-in under account
// linking. The UI shows them as they are, and keys its translations on
// them: keep them byte-identical.
const (
	reasonEmailPasswordSignUp  = "Cannot sign up due to security reasons. Please try logging in, use a different login method or contact support. (ERR_CODE_007)"
	reasonEmailPasswordSignIn  = "Cannot sign in due to security reasons. Please try resetting your password, use a different login method or contact support. (ERR_CODE_008)"
	reasonThirdPartySignUp     = "Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_006)"
	reasonThirdPartySignIn     = "Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_004)"
	reasonThirdPartyEmailTaken = "Cannot sign in / up because new email cannot be applied to existing account. Please contact support. (ERR_CODE_005)"
)

// linkAttempts bounds how often a sign-up under account linking starts
// over when a concurrent one changed who owns the email in between.
const linkAttempts = 4

// A linkOutcome is where a new login with an email goes under account
// linking.
type linkOutcome int

const (
	linkNewUser linkOutcome = iota // nobody has the email: a new user, which owns it
	linkJoin                       // join the user that owns the email
	linkRefuse                     // refuse: see linkTarget
)

// linkTarget decides where a new login with email goes under account
// linking. It joins the user that owns the email only if the new login's
// email is verified and so is that user's login with it. Otherwise it is
// refused, so that whoever signs up first with an address they do not
// control can never be joined by its owner's later sign-in, and the owner
// is never joined to them: the owner proves the inbox instead (a password
// reset, or a verification link, verifies the existing login) and signs in
// again.
//
// Logins made while linking was off own nothing. The first time their
// email is met, the oldest of them is made its owner if every one of them
// is verified; one unverified login with the email refuses the sign-up,
// as above.
func (a *Auth) linkTarget(ctx context.Context, email string, verified bool) (linkOutcome, store.Login, error) {
	logins, err := a.store.LoginsByEmail(ctx, email)
	if err != nil || len(logins) == 0 {
		return linkNewUser, store.Login{}, err
	}
	owner, found := store.Login{}, false
	for _, l := range logins {
		if l.OwnsEmail {
			owner, found = l, true
			break
		}
	}
	if !found {
		for _, l := range logins {
			if !l.EmailVerified {
				return linkRefuse, store.Login{}, nil
			}
		}
		owner, err = a.store.ClaimEmail(ctx, logins[0].ID)
		if err != nil {
			// Lost to a concurrent claim, or the login went: the
			// caller starts over.
			return 0, store.Login{}, errLinkRace{err}
		}
	}
	if !verified {
		return linkRefuse, owner, nil
	}
	ownerLogins, err := a.store.Logins(ctx, owner.UserID)
	if err != nil {
		return 0, store.Login{}, err
	}
	for _, l := range ownerLogins {
		if l.Email == email && l.EmailVerified {
			return linkJoin, owner, nil
		}
	}
	return linkRefuse, owner, nil
}

// errLinkRace reports that who owns an email changed while a sign-up
// looked: the sign-up starts over.
type errLinkRace struct{ err error }

func (e errLinkRace) Error() string { return "auth: the email's owner changed: " + e.err.Error() }

func (e errLinkRace) Unwrap() error { return e.err }

func isLinkRace(err error) bool {
	var race errLinkRace
	return errors.As(err, &race) || errors.Is(err, store.ErrEmailOwned)
}

// heldByOther reports whether a user other than userID has email: owns it,
// or has it verified, or, with unverifiedToo, has it at all.
func (a *Auth) heldByOther(ctx context.Context, email, userID string, unverifiedToo bool) (bool, error) {
	logins, err := a.store.LoginsByEmail(ctx, email)
	if err != nil {
		return false, err
	}
	for _, o := range logins {
		if o.UserID != userID && (unverifiedToo || o.OwnsEmail || o.EmailVerified) {
			return true, nil
		}
	}
	return false, nil
}

// signInConflicts reports whether signing in with l, under account
// linking, must be refused: its email is not verified and another user
// owns it, or has it verified. Such a login was made while linking was
// off, or is a stranger's claim on the address; if its holder proves the
// inbox (a reset, a verification link), it signs in again.
func (a *Auth) signInConflicts(ctx context.Context, l store.Login) (bool, error) {
	if !a.cfg.AccountLinking || emailVerified(l) || l.OwnsEmail {
		return false, nil
	}
	logins, err := a.store.LoginsByEmail(ctx, l.Email)
	if err != nil {
		return false, err
	}
	for _, o := range logins {
		if o.UserID != l.UserID && (o.OwnsEmail || o.EmailVerified) {
			return true, nil
		}
	}
	return false, nil
}

// signInUpLinking is /signinup's store step under account linking: it
// signs in with an existing login, or adds the new one to the user that
// owns its email, or makes a new user, or refuses (reason non-empty).
// It returns the login, its user and whether the login is new.
func (a *Auth) signInUpLinking(ctx context.Context, r *http.Request, nl store.Login, newUser store.User) (store.Login, store.User, []store.Login, bool, string, error) {
	for range linkAttempts {
		old, err := a.store.Login(ctx, nl.LoginKey)
		if err == nil {
			// A provider that now reports an address another user has
			// would give this user a second claim on it: refused, and
			// the login keeps the address it had.
			if old.Email != nl.Email {
				if taken, err := a.heldByOther(ctx, nl.Email, old.UserID, false); err != nil {
					return old, store.User{}, nil, false, "", err
				} else if taken && nl.EmailVerified {
					return old, store.User{}, nil, false, reasonThirdPartyEmailTaken, nil
				} else if taken {
					return old, store.User{}, nil, false, reasonThirdPartySignIn, nil
				}
			}
			// Asking to own the email matters only if the login went
			// meanwhile and this creates it: then it must own it.
			owning := nl
			owning.OwnsEmail = true
			l, created, err := a.store.SignInUp(ctx, owning, newUser)
			if isLinkRace(err) || err == nil && created {
				continue
			}
			if err != nil {
				return l, store.User{}, nil, false, "", err
			}
			if conflict, err := a.signInConflicts(ctx, l); err != nil || conflict {
				return l, store.User{}, nil, false, reasonThirdPartySignIn, err
			}
			// A new, verified address that nobody else has is this
			// user's to own, as it would be at sign-up.
			if l.Email != old.Email && l.EmailVerified && !l.OwnsEmail {
				if taken, err := a.heldByOther(ctx, l.Email, l.UserID, true); err == nil && !taken {
					a.afterVerified(ctx, l)
				}
			}
			u, logins, err := a.user(ctx, l.UserID)
			for _, got := range logins {
				if got.ID == l.ID {
					l = got
				}
			}
			return l, u, logins, false, "", err
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.Login{}, store.User{}, nil, false, "", err
		}
		outcome, owner, err := a.linkTarget(ctx, nl.Email, nl.EmailVerified)
		switch {
		case isLinkRace(err):
			continue
		case err != nil:
			return store.Login{}, store.User{}, nil, false, "", err
		case outcome == linkRefuse:
			return store.Login{}, store.User{}, nil, false, reasonThirdPartySignUp, nil
		case outcome == linkJoin:
			joined := nl
			joined.ID, joined.UserID = uuid.NewString(), owner.UserID
			err := a.store.LinkLogin(ctx, joined)
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
				continue // the owner changed, or a twin sign-in added this login
			} else if err != nil {
				return store.Login{}, store.User{}, nil, false, "", err
			}
			u, logins, err := a.user(ctx, owner.UserID)
			if err != nil {
				return store.Login{}, store.User{}, nil, false, "", err
			}
			for _, l := range logins {
				if l.ID == joined.ID {
					joined = l // with the epoch read alongside
				}
			}
			a.emit(ctx, r, Event{Kind: EventAccountLinked, UserID: owner.UserID, Method: nl.Method, ThirdPartyID: nl.ThirdParty})
			return joined, u, logins, true, "", nil
		}
		owning := nl
		owning.OwnsEmail = true
		l, created, err := a.store.SignInUp(ctx, owning, newUser)
		if isLinkRace(err) {
			continue
		} else if err != nil {
			return store.Login{}, store.User{}, nil, false, "", err
		}
		if !created {
			continue // a twin sign-in created it: start over as a sign-in
		}
		return l, newUser, []store.Login{l}, true, "", nil
	}
	return store.Login{}, store.User{}, nil, false, "", fmt.Errorf("auth: the owner of an email kept changing during a sign-up")
}

// afterVerified makes, under account linking, a login whose email was just
// verified the owner of that email if nobody owns it: its user becomes a
// primary user that later logins with the email may join. If another user
// owns it, the two stay apart: joining them would merge accounts behind
// their owners' backs.
func (a *Auth) afterVerified(ctx context.Context, l store.Login) {
	if !a.cfg.AccountLinking || l.OwnsEmail || l.Email == "" {
		return
	}
	if _, err := a.store.ClaimEmail(ctx, l.ID); err != nil && !errors.Is(err, store.ErrEmailOwned) && !errors.Is(err, store.ErrNotFound) {
		// The email stays verified; the owner is settled the next time
		// a sign-up meets the address (see linkTarget).
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: could not make a verified login own its email",
			slog.String("user_id", l.UserID), slog.String("error", err.Error()))
	}
}

// writeNotAllowed refuses a sign-up or sign-in for account linking's
// sake, with the SDKs' status and reason.
func writeNotAllowed(w http.ResponseWriter, status, reason string) {
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}{status, reason})
}
