package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/google/uuid"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/store"
)

// The SDKs' reasons for refusing a sign-up or sign-in under account
// linking. The UI shows them as they are, and keys its translations on
// them: keep them byte-identical. Email and password's are its package's.
const (
	reasonThirdPartySignUp     = "Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_006)"
	reasonThirdPartySignIn     = "Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_004)"
	reasonThirdPartyEmailTaken = "Cannot sign in / up because new email cannot be applied to existing account. Please contact support. (ERR_CODE_005)"
)

// Account linking decides where a new login with an email goes from one
// read of the logins that have the email, and writes the decision with
// store methods that check again, in the same step, the fact it rests on
// (see store.UserStore): LinkLogin that the user still owns the email, or
// that nobody does yet; SignInUp and CreateUser that nobody owns it;
// UpdatePasswordHash that the password is the one read. A write whose
// fact no longer holds changes nothing, and the decision is made again
// from a fresh read, at most linkAttempts times.
//
// Why concurrent sign-ins converge: ownership of an email moves only from
// nobody to one login (the store's unique owner), so every retry after a
// lost race finds an owner, or the same state with the winner's login in
// it, and then decides to join or to sign in. Why a fault between two
// writes leaves a legal state: the only decision of more than one write
// is an eviction, whose writes are ordered so that each prefix is safe on
// its own: the password is voided (nobody can sign in with it, a reset
// brings it back), then the user's sessions end (the state of a reset),
// then the new login joins as the owner. Until the last write nobody has
// gained anything, and the next sign-in plans the rest again.
const linkAttempts = 4

// A linkKind is where a new login goes under account linking.
type linkKind int

const (
	linkNewUser linkKind = iota // a new user, which owns the email if the login proves it
	linkJoin                    // join the user that owns the email
	linkAdopt                   // join the user of a proven login nobody owns, and own the email
	linkEvict                   // end the password and sessions of an unproven password login, then join its user and own the email
	linkRefuse                  // refuse: someone owns the email and the login does not prove it
)

// A linkPlan is a decision of account linking: where a new login goes, the
// user it joins, and for linkEvict the login whose holder is evicted.
type linkPlan struct {
	kind   linkKind
	userID string
	evict  store.Login
}

// planLink decides where a new login goes, given whether it proves its
// email (store.Login.EmailProven) and the logins that have the email, of
// every user, oldest first.
//
// Only a login that proves the email joins anybody or owns it: so nothing
// a person who cannot read the inbox makes with the address (a password
// sign-up, a provider that does not vouch for it, a verification link
// the owner was tricked into opening) becomes a user that the owner's
// later sign-in joins while its maker still holds a way in. A login that
// proves the email joins, in order: the user that owns it; the user of
// the oldest login that proves it (made while linking was off, or left
// when its owner was unlinked); the user of the address's password login,
// after ending what that login's maker may hold (its password and every
// session of its user), as a reset would. A login that does not prove it
// is refused when someone owns it, and otherwise makes a user that owns
// nothing, so an unproven login never stands in the owner's way.
func planLink(proves bool, logins []store.Login) linkPlan {
	var proven, password *store.Login
	for i := range logins {
		l := &logins[i]
		switch {
		case l.OwnsEmail && proves:
			return linkPlan{kind: linkJoin, userID: l.UserID}
		case l.OwnsEmail:
			return linkPlan{kind: linkRefuse}
		case l.EmailProven && proven == nil:
			proven = l
		case !l.EmailProven && l.Method == store.MethodEmailPassword:
			password = l
		}
	}
	switch {
	case !proves || proven == nil && password == nil:
		return linkPlan{kind: linkNewUser}
	case proven != nil:
		return linkPlan{kind: linkAdopt, userID: proven.UserID}
	}
	return linkPlan{kind: linkEvict, userID: password.UserID, evict: *password}
}

// errLinkRace reports that the logins of an email changed between the
// read a decision was made from and its write: the decision is made
// again.
var errLinkRace = errors.New("auth: the logins of an email changed during a sign-up")

// raced maps the store's "the fact you checked no longer holds" answers to
// errLinkRace.
func raced(err error) error {
	if errors.Is(err, store.ErrEmailOwned) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
		return errLinkRace
	}
	return err
}

// A linked sign-in is what /signinup answers under account linking: the
// login and its user, whether the login is new, or the SDKs' reason for a
// refusal.
type linked struct {
	login   store.Login
	user    store.User
	logins  []store.Login
	created bool
	refusal string
}

// signInUpLinking is /signinup's store step under account linking: it
// signs in with an existing login, or places the new one as planLink
// decides.
func (a *Auth) signInUpLinking(ctx context.Context, r *http.Request, nl store.Login, newUser store.User) (linked, error) {
	for range linkAttempts {
		res, err := a.linkOnce(ctx, r, nl, newUser)
		if !errors.Is(err, errLinkRace) {
			return res, err
		}
	}
	return linked{}, fmt.Errorf("auth: the logins of an email kept changing during a sign-up")
}

func (a *Auth) linkOnce(ctx context.Context, r *http.Request, nl store.Login, newUser store.User) (linked, error) {
	old, err := a.store.Login(ctx, nl.LoginKey)
	if err == nil {
		return a.linkedSignIn(ctx, old, nl, newUser)
	} else if !errors.Is(err, store.ErrNotFound) {
		return linked{}, err
	}
	logins, err := a.loginsByEmail(ctx, nl.Tenant, nl.Email)
	if err != nil {
		return linked{}, err
	}
	plan := planLink(nl.EmailProven, logins)
	switch plan.kind {
	case linkRefuse:
		return linked{refusal: reasonThirdPartySignUp}, nil
	case linkNewUser:
		owning := nl
		owning.OwnsEmail = nl.EmailProven
		var l store.Login
		err := a.owning(ctx, r, owning, newUser.ID, logins, func() error {
			var created bool
			l, created, err = a.store.SignInUp(ctx, owning, newUser)
			if err != nil || !created {
				// A twin sign-in created the login, or another took
				// the email: decide again.
				return firstErr(raced(err), errLinkRace)
			}
			return nil
		})
		if err != nil {
			return linked{}, err
		}
		// An unproven login made while someone proved the address is
		// refused its first session too, like its later sign-ins.
		if !nl.EmailProven {
			if conflict, err := a.signInConflicts(ctx, l); err != nil || conflict {
				return linked{refusal: reasonThirdPartySignUp}, err
			}
		}
		return linked{login: l, user: newUser, logins: []store.Login{l}, created: true}, nil
	case linkEvict:
		// Every passkey goes too, as a reset of the password would drop
		// them (store.Store's ResetPassword): its maker may have added
		// them.
		if err := a.dropPasskeys(ctx, r, plan.evict.UserID); err != nil {
			return linked{}, err
		}
		if err := a.evict(ctx, r, plan.evict); err != nil {
			return linked{}, err
		}
	}
	return a.join(ctx, r, nl, plan, logins)
}

// firstErr returns the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// evict ends what the maker of an unproven password login may hold before
// a login that proves its email joins its user: the password (a reset
// sets a new one) and then every session of the user.
func (a *Auth) evict(ctx context.Context, r *http.Request, l store.Login) error {
	if l.PasswordHash != "" {
		if err := a.store.UpdatePasswordHash(ctx, l.UserID, l.PasswordHash, ""); err != nil {
			return raced(err) // a reset or an upgrade changed it: decide again
		}
	}
	handles, err := a.store.RevokeUserSessions(ctx, l.UserID)
	if err != nil {
		return err
	}
	// The user is about to be the owner's: the maker's access tokens stop
	// here at once, as a deleted user's do, whatever
	// Config.CheckSessionInStore says. Other instances stop them at the
	// next store read with it, or when they expire.
	now := a.cfg.Now()
	for _, h := range handles {
		a.evicted.Add(h, now, now.Add(a.cfg.AccessTokenLifetime+jwtLeeway))
		a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: l.UserID, SessionHandle: h})
	}
	return nil
}

// dropPasskeys deletes every passkey of the user but the last of its
// logins, which the store keeps (a passkey sign-up at the address is
// refused at sign-in once another user holds it).
func (a *Auth) dropPasskeys(ctx context.Context, r *http.Request, userID string) error {
	logins, err := a.store.Logins(ctx, userID)
	if err != nil {
		return err
	}
	for _, l := range logins {
		if l.Method != store.MethodWebAuthn {
			continue
		}
		if _, err := a.store.DeleteLogin(ctx, l.ID); errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrLastLogin) {
			continue
		} else if err != nil {
			return err
		}
		a.emit(ctx, r, Event{Kind: EventPasskeyRemoved, UserID: userID, Method: store.MethodWebAuthn})
	}
	return nil
}

// join adds the new login to the user of plan, as its owner's sibling
// (linkJoin) or as the email's new owner (linkAdopt, linkEvict); read is
// the email's logins that plan was made from.
func (a *Auth) join(ctx context.Context, r *http.Request, nl store.Login, plan linkPlan, read []store.Login) (linked, error) {
	joined := nl
	joined.ID, joined.UserID = uuid.NewString(), plan.userID
	joined.OwnsEmail = plan.kind != linkJoin
	err := a.owning(ctx, r, joined, plan.userID, read, func() error { return raced(a.store.LinkLogin(ctx, joined)) })
	if err != nil {
		return linked{}, err
	}
	u, logins, err := a.user(ctx, plan.userID)
	if err != nil {
		return linked{}, err
	}
	for _, l := range logins {
		if l.ID == joined.ID {
			joined = l // with the epoch read alongside
		}
	}
	a.emit(ctx, r, Event{Kind: EventAccountLinked, UserID: plan.userID, Method: nl.Method, ThirdPartyID: nl.ThirdParty})
	return linked{login: joined, user: u, logins: logins, created: true}, nil
}

// linkedSignIn signs in with an existing third-party login under account
// linking, recording the email the provider reports now.
func (a *Auth) linkedSignIn(ctx context.Context, old, nl store.Login, newUser store.User) (linked, error) {
	if old.Email != nl.Email {
		// A provider that now reports an address another user holds
		// would give this user a second claim on it: refused, and the
		// login keeps the address it had.
		if taken, err := a.heldByOther(ctx, nl.Tenant, nl.Email, old.UserID); err != nil || taken {
			reason := reasonThirdPartySignIn
			if nl.EmailProven {
				reason = reasonThirdPartyEmailTaken
			}
			return linked{refusal: reason}, err
		}
	}
	// If the login went meanwhile this creates it, owning the email only
	// if it proves it and nobody owns it; the retry then signs in.
	owning := nl
	owning.OwnsEmail = nl.EmailProven
	l, created, err := a.store.SignInUp(ctx, owning, newUser)
	if err != nil || created {
		return linked{}, firstErr(raced(err), errLinkRace)
	}
	if conflict, err := a.signInConflicts(ctx, l); err != nil || conflict {
		return linked{refusal: reasonThirdPartySignIn}, err
	}
	u, logins, err := a.user(ctx, l.UserID)
	if err == nil && l.EmailProven && !kit.OwnedWithin(logins, l.Email) {
		// An address it proves is its user's to own, if nobody's.
		if owned := a.afterVerified(ctx, l); owned.OwnsEmail {
			u, logins, err = a.user(ctx, l.UserID)
		}
	}
	for _, got := range logins {
		if got.ID == l.ID {
			l = got
		}
	}
	return linked{login: l, user: u, logins: logins}, err
}

// signUpRefused reports whether account linking refuses a password
// sign-up with email: a login owns the address or proves it, and the new
// login, which proves nothing, would be refused at every sign-in.
func (a *Auth) signUpRefused(ctx context.Context, email string) (bool, error) {
	if !a.cfg.AccountLinking {
		return false, nil
	}
	return a.heldByOther(ctx, a.tenantOf(ctx).StoreID(), email, "")
}

// heldByOther reports whether a user other than userID holds email in
// tenant: one of its logins there owns it or proves it.
func (a *Auth) heldByOther(ctx context.Context, tenant, email, userID string) (bool, error) {
	logins, err := a.loginsByEmail(ctx, tenant, email)
	if err != nil {
		return false, err
	}
	for _, o := range logins {
		if o.UserID != userID && (o.OwnsEmail || o.EmailProven) {
			return true, nil
		}
	}
	return false, nil
}

// signInConflicts reports whether signing in with l, under account
// linking, must be refused: it does not prove its email and another user
// holds it. Such a login is a stranger's claim on the address, or its
// holder has yet to prove the inbox: a reset does, for a password.
func (a *Auth) signInConflicts(ctx context.Context, l store.Login) (bool, error) {
	if !a.cfg.AccountLinking || l.Email == "" || l.EmailProven {
		return false, nil
	}
	return a.heldByOther(ctx, l.Tenant, l.Email, l.UserID)
}

// afterVerified makes, under account linking, a login that proves its
// email the email's owner if nobody owns it, and returns the login as it
// is then. If another user owns it, the two stay apart: joining them would
// merge accounts behind their owners' backs.
func (a *Auth) afterVerified(ctx context.Context, l store.Login) store.Login {
	if !a.cfg.AccountLinking || l.OwnsEmail || !l.EmailProven || l.Email == "" {
		return l
	}
	owned, claim := l, l
	claim.OwnsEmail = true
	err := a.owning(ctx, nil, claim, l.UserID, nil, func() (err error) {
		owned, err = a.store.ClaimEmail(ctx, l.ID)
		return err
	})
	if err == nil {
		return owned
	}
	if !errors.Is(err, store.ErrEmailOwned) && !errors.Is(err, store.ErrNotFound) {
		// The email stays proven; the next login that proves it and
		// finds nobody owning it adopts this user (see planLink).
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: could not make a login own its email",
			slog.String("user_id", l.UserID), slog.String("error", err.Error()))
	}
	return l
}

// owning runs write, which makes l (of user owner) the owner of its
// email if l.OwnsEmail is set (and otherwise only adds it), between two rounds of ending the sessions
// of every other user's login that does not prove the email: once the
// inbox's owner holds the address, nothing a stranger made with it stays
// open (their sign-ins are refused from then on, see signInConflicts).
// The round before covers a fault after the write; the round after, a
// stranger's sign-in that began before it (its session is refused by the
// epoch the round advances). The round before works from read, the
// email's logins as the caller just read them, or reads them if nil.
func (a *Auth) owning(ctx context.Context, r *http.Request, l store.Login, owner string, read []store.Login, write func() error) error {
	if !l.OwnsEmail {
		return write()
	}
	if read == nil {
		var err error
		if read, err = a.loginsByEmail(ctx, l.Tenant, l.Email); err != nil {
			return err
		}
	}
	if err := a.endUnproven(ctx, r, read, owner); err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	logins, err := a.loginsByEmail(ctx, l.Tenant, l.Email)
	if err == nil {
		err = a.endUnproven(ctx, r, logins, owner)
	}
	if err != nil {
		// The write stands; the round before ended what existed then, and
		// a sign-in begun since is refused as the owner exists.
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: could not end the sessions of unproven logins of an owned email",
			slog.String("user_id", owner), slog.String("error", err.Error()))
	}
	return nil
}

// endUnproven ends every session of each user other than owner that has
// one of logins (those of an email) and does not prove it, and drops its
// passkeys: the login is refused from now on, and a passkey its maker
// added would otherwise keep a user with the owner's address theirs.
func (a *Auth) endUnproven(ctx context.Context, r *http.Request, logins []store.Login, owner string) error {
	ended := map[string]bool{owner: true}
	for _, o := range logins {
		if o.EmailProven || ended[o.UserID] {
			continue
		}
		ended[o.UserID] = true
		if err := a.dropPasskeys(ctx, r, o.UserID); err != nil {
			return err
		}
		handles, err := a.store.RevokeUserSessions(ctx, o.UserID)
		if err != nil {
			return err
		}
		for _, h := range handles {
			a.emit(ctx, r, Event{Kind: EventSessionRevoked, UserID: o.UserID, SessionHandle: h})
		}
	}
	return nil
}

// signInUpAlone is the store step of a sign-in by a provider, a
// passwordless code or a passkey without account linking: the login
// signs in to its own user, or makes a new one.
func (a *Auth) signInUpAlone(ctx context.Context, nl store.Login, newUser store.User) (linked, error) {
	l, created, err := a.store.SignInUp(ctx, nl, newUser)
	if err != nil || created {
		return linked{login: l, user: newUser, logins: []store.Login{l}, created: created}, err
	}
	u, logins, err := a.user(ctx, l.UserID)
	return linked{login: l, user: u, logins: logins}, err
}

// loginsByEmail are the logins of email in tenant (as the store keeps
// it): account linking never joins, nor weighs, a login of another
// tenant's.
func (a *Auth) loginsByEmail(ctx context.Context, tenant, email string) ([]store.Login, error) {
	logins, err := a.store.LoginsByEmail(ctx, email)
	return slices.DeleteFunc(logins, func(l store.Login) bool { return l.Tenant != tenant }), err
}
