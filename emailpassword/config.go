package emailpassword

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/password"
	"github.com/latchkit/auth/mailer"
)

// Defaults for the zero values of Config.
const (
	DefaultHashQueueTimeout   = 10 * time.Second
	DefaultResetTokenLifetime = time.Hour
)

// Config configures email and password logins and their reset. The zero
// value means DefaultPolicy, the OWASP hashing parameters and the
// defaults below. The reset mail goes through auth.Config's Email, whose
// Mailer turns the reset endpoints on.
type Config struct {
	// Policy checks new passwords. Default DefaultPolicy.
	Policy Policy

	// Hashing sets the argon2id parameters of new password hashes. The
	// zero value means the OWASP recommendation (19 MiB, 2 iterations, 1
	// thread); weaker parameters are refused unless InsecureWeakHashing is
	// set. Hashes made with other parameters are upgraded at the next
	// successful sign-in.
	Hashing Hashing

	// InsecureWeakHashing allows Hashing below the OWASP minimum. Only for
	// tests, where hashing would dominate run time.
	InsecureWeakHashing bool

	// MaxConcurrentHashes bounds how many password hashes run at once, and
	// so the memory they take (19 MiB each by default): a sign-in, sign-up
	// or password reset that finds them all running waits its turn (see
	// HashQueueTimeout), and holds no hashing memory while it waits.
	// Default GOMAXPROCS.
	MaxConcurrentHashes int

	// HashQueueTimeout is how long a sign-in, sign-up or password reset
	// waits for a hashing slot. It waits its turn, behind the requests
	// that came before it, until a slot frees, HashQueueTimeout passes or
	// its request's context ends (the client goes, or a deadline the
	// application or its server set passes), whichever comes first;
	// past the wait it is answered 503 with Retry-After. Default
	// DefaultHashQueueTimeout (10 seconds): on two cores, at about 25 ms
	// a hash, a burst of 500 sign-ins is answered within about 6.5
	// seconds, every one. Set it lower to turn a burst away sooner, and
	// give an HTTP server's WriteTimeout, or a proxy's, room for the wait.
	HashQueueTimeout time.Duration

	// ResetPasswordURL is the page reset links open, with ?token=...&
	// tenantId=public added. Default auth.Config's AppURL +
	// "/auth/reset-password", the page of the SuperTokens UI.
	ResetPasswordURL string

	// ResetEmail renders the password reset email, with ResetEmailData.
	// Default DefaultResetEmail().
	ResetEmail *mailer.Template

	// ResetTokenLifetime is how long a password reset link works. Default
	// DefaultResetTokenLifetime, one hour.
	ResetTokenLifetime time.Duration

	// PasswordChangedEmail renders the notice a user gets, with
	// auth.Config's Email.Mailer, when their password is changed or
	// added (POST /user/password/change), with PasswordChangedEmailData.
	// Default DefaultPasswordChangedEmail().
	PasswordChangedEmail *mailer.Template
}

// Hashing holds argon2id parameters.
type Hashing struct {
	Memory      uint32 // KiB
	Iterations  uint32
	Parallelism uint8
}

// withDefaults is c with its defaults filled in, or why c will not do.
func (c Config) withDefaults(setup kit.Setup) (Config, error) {
	if c.Policy == nil {
		c.Policy = DefaultPolicy
	}
	if c.HashQueueTimeout == 0 {
		c.HashQueueTimeout = DefaultHashQueueTimeout
	}
	if c.MaxConcurrentHashes == 0 {
		c.MaxConcurrentHashes = runtime.GOMAXPROCS(0)
	}
	if c.HashQueueTimeout < 0 || c.MaxConcurrentHashes < 0 {
		return c, errors.New("auth: Config.EmailPassword limits must not be negative")
	}
	hp := c.params()
	if hp.Memory == 0 || hp.Time == 0 || hp.Threads == 0 {
		return c, errors.New("auth: Config.EmailPassword.Hashing needs Memory, Iterations and Parallelism")
	}
	// OWASP lists equivalent argon2id settings from 46 MiB x 1 down to
	// 7 MiB x 5; all do at least this much work.
	if !c.InsecureWeakHashing && (hp.Memory < 7*1024 || uint64(hp.Memory)*uint64(hp.Time) < 35*1024) {
		return c, errors.New("auth: Config.EmailPassword.Hashing is below the OWASP minimum (19 MiB, 2 iterations)")
	}
	return c.withResetDefaults(setup)
}

// withResetDefaults fills in and checks the reset's settings.
func (c Config) withResetDefaults(setup kit.Setup) (Config, error) {
	if setup.CanMail {
		if c.ResetPasswordURL == "" {
			c.ResetPasswordURL = strings.TrimRight(setup.AppURL, "/") + "/auth/reset-password"
		}
		if u, err := url.Parse(c.ResetPasswordURL); err != nil || u.Host == "" {
			return c, fmt.Errorf("auth: Config.EmailPassword.ResetPasswordURL %q is not an absolute URL", c.ResetPasswordURL)
		}
	}
	if c.ResetEmail == nil {
		t := DefaultResetEmail()
		c.ResetEmail = &t
	} else if c.ResetEmail.Subject == nil || c.ResetEmail.Text == nil {
		return c, errors.New("auth: Config.EmailPassword.ResetEmail needs a Subject and a Text template")
	}
	if c.PasswordChangedEmail == nil {
		t := DefaultPasswordChangedEmail()
		c.PasswordChangedEmail = &t
	} else if c.PasswordChangedEmail.Subject == nil || c.PasswordChangedEmail.Text == nil {
		return c, errors.New("auth: Config.EmailPassword.PasswordChangedEmail needs a Subject and a Text template")
	}
	if c.ResetTokenLifetime == 0 {
		c.ResetTokenLifetime = DefaultResetTokenLifetime
	} else if c.ResetTokenLifetime < 0 {
		return c, errors.New("auth: Config.EmailPassword.ResetTokenLifetime must not be negative")
	}
	return c, nil
}

// params are the argon2id parameters of new hashes.
func (c *Config) params() password.Params {
	if c.Hashing == (Hashing{}) {
		return password.Default
	}
	return password.Params{Memory: c.Hashing.Memory, Time: c.Hashing.Iterations, Threads: c.Hashing.Parallelism}
}
