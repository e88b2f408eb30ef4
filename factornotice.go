package auth

import (
	"context"
	"log/slog"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// WrongCodeEmailData is what the wrong-code notice templates can show:
// the notice a user gets when a wrong second-factor code follows a
// sign-in, so that they learn their first factor is known.
type WrongCodeEmailData struct {
	Email        string // the recipient, the address of the login signed in with
	SignedInWith string // that login, in words: "your password"
	Time         string // when the sign-in's code was wrong, in UTC
}

// DefaultWrongCodeEmail returns the notice used when
// Config.MFA.WrongCodeEmail is nil.
func DefaultWrongCodeEmail() mailer.Template { return kit.MustClone(defaultWrongCodeEmail) }

// sendWrongCodeNotice tells the user of session s, by the address of the
// login s signed in with, that a wrong code followed that sign-in. A
// login with no address (a phone number) gets no notice.
func (a *Auth) sendWrongCodeNotice(ctx context.Context, s *Session) {
	if a.cfg.Email.Mailer == nil {
		return
	}
	at := a.cfg.Now().UTC()
	a.outbox.enqueue(a, mailJob{"wrong code notice", context.WithoutCancel(ctx), func(ctx context.Context) {
		l, err := a.loginOf(ctx, s.UserID, s.LoginID)
		if err != nil || l.Email == "" {
			return // the login went, or has no address
		}
		err = a.mail(ctx, a.cfg.MFA.WrongCodeEmail, l.Email, WrongCodeEmailData{
			Email:        l.Email,
			SignedInWith: signedInWith(l),
			Time:         at.Format("2 January 2006, 15:04 UTC"),
		})
		if err != nil {
			a.mailFailed(ctx, "wrong code notice", s.UserID, "sending the wrong code notice", err)
			return
		}
		a.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "auth: user told of a wrong second-factor code after a sign-in",
			slog.String("user_id", s.UserID))
	}})
}

// signedInWith names the first factor of login l as the notice says it.
func signedInWith(l store.Login) string {
	switch l.Method {
	case store.MethodPasswordless:
		return "a sign-in code or link sent to you"
	case store.MethodThirdParty:
		return "your " + l.ThirdParty + " account"
	case store.MethodWebAuthn:
		return "a passkey"
	}
	return "your password"
}
