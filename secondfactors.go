package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/latchkit/auth/store"
)

// secondFactors is a user's record of second factors (a Login of
// store.MethodSecondFactors, in its Material): one record, so that every
// change to it is one compare-and-swap.
type secondFactors struct {
	// inTenant are the factors the tenant of the session at hand requires
	// of every user there (Tenant.RequiredSecondFactors): not the
	// user's, so never stored, and set only where a session is at hand.
	inTenant []string
	// Required are the factors the application requires of the user
	// (RequireFactors), one of which the user must complete.
	Required []string `json:"required,omitempty"`
	// TOTP are the user's authenticator apps.
	TOTP []totpDevice `json:"totp,omitempty"`
	// Step is the last TOTP time step accepted for the user, on any
	// device: a code of that step or an earlier one is never accepted
	// again (RFC 6238 section 5.2).
	Step int64 `json:"step,omitempty"`
	// RecoveryCodes are the SHA-256 hashes (hex) of the unused recovery
	// codes.
	RecoveryCodes []string `json:"recovery,omitempty"`
	// UsedRecoveryCodes are the hashes of the codes of the set that were
	// used, so that one presented again is told from a guess.
	UsedRecoveryCodes []string `json:"recoveryUsed,omitempty"`
	// Failures counts the wrong TOTP and recovery codes in a row, the
	// last at FailedAt (Unix milliseconds).
	Failures int   `json:"failures,omitempty"`
	FailedAt int64 `json:"failedAt,omitempty"`
	// NoticeAt is when (Unix milliseconds) the user was last told by
	// email that a wrong code followed a sign-in: someone else may know
	// their first factor.
	NoticeAt int64 `json:"noticeAt,omitempty"`

	login store.Login // the record as read, for the compare-and-swap
}

// totpDevice is one authenticator app of a user.
type totpDevice struct {
	Name string `json:"name"`
	// Secret is the TOTP secret, sealed with Config.Secrets when it is
	// set (Sealed), in the clear otherwise, as signing keys are.
	Secret   []byte `json:"secret"`
	Sealed   bool   `json:"sealed,omitempty"`
	Verified bool   `json:"verified,omitempty"`
	Created  int64  `json:"created"` // Unix milliseconds
}

// verifiedTOTP reports whether the user has a TOTP device set up.
func (sf *secondFactors) verifiedTOTP() bool {
	for _, d := range sf.TOTP {
		if d.Verified {
			return true
		}
	}
	return false
}

// device returns the index of the device named name, or -1.
func (sf *secondFactors) device(name string) int {
	for i, d := range sf.TOTP {
		if d.Name == name {
			return i
		}
	}
	return -1
}

// locked reports how long the user's TOTP stays locked after
// mfaMaxFailures wrong codes in a row, or 0.
func (sf *secondFactors) locked(now time.Time) time.Duration {
	if sf.Failures < mfaMaxFailures {
		return 0
	}
	return max(time.UnixMilli(sf.FailedAt).Add(mfaLockout).Sub(now), 0)
}

// fail counts a wrong code at now. A run of wrong codes ends a lockout
// after the last: older ones no longer count. A wrong code from a session
// that has not completed its second factor (pending) comes from whoever
// holds the first: fail reports whether to tell the user, at most once
// in a lockout's length.
func (sf *secondFactors) fail(now time.Time, pending bool) (notify bool) {
	if now.Sub(time.UnixMilli(sf.FailedAt)) >= mfaLockout {
		sf.Failures = 0
	}
	sf.Failures++
	sf.FailedAt = now.UnixMilli()
	if pending && now.Sub(time.UnixMilli(sf.NoticeAt)) >= mfaLockout {
		sf.NoticeAt = now.UnixMilli()
		return true
	}
	return false
}

// secondFactors reads a user's second factors: an empty record for a
// user who has none.
func (a *Auth) secondFactors(ctx context.Context, userID string) (*secondFactors, error) {
	l, err := a.store.Login(ctx, store.SecondFactorsKey(userID))
	if errors.Is(err, store.ErrNotFound) {
		return &secondFactors{}, nil
	}
	if err != nil {
		return nil, err
	}
	sf := &secondFactors{login: l}
	if len(l.Material) > 0 {
		if err := json.Unmarshal(l.Material, sf); err != nil {
			return nil, fmt.Errorf("auth: the second factors of user %s are malformed: %w", userID, err)
		}
	}
	return sf, nil
}

// errUnchanged, returned by a change to second factors, leaves the
// record as it is: changeSecondFactors then returns it with no error.
var errUnchanged = errors.New("unchanged")

// changeSecondFactors applies change to the user's second factors and
// writes the result, a compare-and-swap retried while other changes race
// it, so that each change is applied once to the record as it is: a TOTP
// step is accepted once, a recovery code spent once, across instances.
// change may run several times, on the record as each read finds it; an
// error from it (errUnchanged included) writes nothing. The record is
// made on the user's first change. It returns the record as written.
func (a *Auth) changeSecondFactors(ctx context.Context, userID string, change func(*secondFactors, time.Time) error) (*secondFactors, error) {
	for range 64 {
		sf, err := a.secondFactors(ctx, userID)
		if err != nil {
			return nil, err
		}
		if err := change(sf, a.cfg.Now()); errors.Is(err, errUnchanged) {
			return sf, nil
		} else if err != nil {
			return sf, err
		}
		material, err := json.Marshal(sf)
		if err != nil {
			return nil, err
		}
		if sf.login.ID == "" {
			l := store.Login{
				LoginKey:  store.SecondFactorsKey(userID),
				ID:        uuid.NewString(),
				UserID:    userID,
				Material:  material,
				CreatedAt: a.cfg.Now().Truncate(time.Millisecond),
			}
			err = a.store.LinkLogin(ctx, l)
			sf.login = l
		} else {
			err = a.store.UpdateLoginMaterial(ctx, sf.login.ID, sf.login.Material, material)
			sf.login.Material = material
		}
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return sf, nil
	}
	return nil, fmt.Errorf("auth: the second factors of a user changed 64 times in a row: %w", errOverloaded)
}

// SecondFactors is what a user has set up of multi-factor auth, as an
// account page shows it.
type SecondFactors struct {
	// Required are the factors the application requires of this user
	// (RequireFactors), beside Config.MFA.Required.
	Required []string
	// TOTPDevices are the user's authenticator apps, set up (Verified)
	// or waiting for their first code.
	TOTPDevices []TOTPDevice
	// RecoveryCodes is how many unused recovery codes the user has.
	RecoveryCodes int
}

// TOTPDevice is one authenticator app of a user. Its secret is never
// handed out again after the device is created.
type TOTPDevice struct {
	Name      string
	Verified  bool
	CreatedAt time.Time
}

// SecondFactors returns what a user has set up of multi-factor auth. A
// user with nothing set up, or an unknown user, has the zero value.
func (a *Auth) SecondFactors(ctx context.Context, userID string) (SecondFactors, error) {
	sf, err := a.secondFactors(ctx, userID)
	if err != nil {
		return SecondFactors{}, err
	}
	out := SecondFactors{Required: sf.Required, RecoveryCodes: len(sf.RecoveryCodes)}
	for _, d := range sf.TOTP {
		out.TOTPDevices = append(out.TOTPDevices, TOTPDevice{Name: d.Name, Verified: d.Verified, CreatedAt: time.UnixMilli(d.Created)})
	}
	return out, nil
}

// NewRecoveryCodes makes a new set of ten recovery codes for a user, which
// voids the old set, and returns them to be shown this once: the store
// keeps only their hashes. It is POST /mfa/recovery-codes for an
// application's own account page, which must ask it only for a session
// that has completed its second factor. It returns an error matching
// ErrNotFound for an unknown user.
func (a *Auth) NewRecoveryCodes(ctx context.Context, userID string) ([]string, error) {
	if !a.mfaOn() {
		return nil, errors.New("auth: NewRecoveryCodes needs Config.MFA")
	}
	codes, hashes := newRecoveryCodes()
	if _, err := a.changeSecondFactors(ctx, userID, func(sf *secondFactors, _ time.Time) error {
		sf.RecoveryCodes, sf.UsedRecoveryCodes = hashes, nil
		return nil
	}); err != nil {
		return nil, err
	}
	a.emit(ctx, nil, Event{Kind: EventRecoveryCodesCreated, UserID: userID})
	return codes, nil
}

// ResetSecondFactors removes every TOTP device and recovery code of a
// user and ends their sessions (as RevokeAllSessions does), for an application's support acting on a
// user who lost both their device and their codes, once it has checked
// who they are some other way. What the application requires of the user
// stays: the next sign-in sets up a device anew, as a first one. It
// returns an error matching ErrNotFound for an unknown user.
func (a *Auth) ResetSecondFactors(ctx context.Context, userID string) error {
	if _, err := a.store.UserByID(ctx, userID); err != nil {
		return err
	}
	var removed []string
	if _, err := a.changeSecondFactors(ctx, userID, func(sf *secondFactors, _ time.Time) error {
		removed = removed[:0]
		for _, d := range sf.TOTP {
			if d.Verified {
				removed = append(removed, d.Name)
			}
		}
		// The step stays: a code of a removed device must not work on
		// the next one within its window.
		sf.TOTP, sf.RecoveryCodes, sf.UsedRecoveryCodes, sf.Failures, sf.FailedAt = nil, nil, nil, 0, 0
		return nil
	}); err != nil {
		return err
	}
	for range removed {
		a.emit(ctx, nil, Event{Kind: EventFactorRemoved, UserID: userID, Method: FactorTOTP})
	}
	_, err := a.RevokeAllSessions(ctx, userID)
	return err
}
