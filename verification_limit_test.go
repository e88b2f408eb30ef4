package auth_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// Several users may have one address unverified: providers that do not
// vouch for it let anyone claim it. Asking for verification mail from
// each of them must not flood the inbox: the allowance counts per address
// as well as per user.
func TestVerificationMailPerAddress(t *testing.T) {
	t.Parallel()
	for _, linking := range []bool{false, true} {
		t.Run(fmt.Sprintf("linking %v", linking), func(t *testing.T) {
			t.Parallel()
			s, p := linkingServer(t, linking, auth.Config{})
			const inbox = "flood@example.com"
			sent := 0
			for i := range 6 {
				p.SetIdentity(fmt.Sprintf("claimant-%d", i), inbox, false)
				c := s.NewClient(authtest.Header)
				wantOK(t, "provider sign-in", c.SignInWithProvider(p))
				res := c.SendVerificationEmail()
				switch {
				case res.StatusCode == http.StatusOK && res.Status == "OK":
					sent++
				case res.StatusCode != http.StatusOK || res.Status != "GENERAL_ERROR":
					t.Errorf("claimant %d: %d %s, want OK or the rate limit's GENERAL_ERROR", i, res.StatusCode, res.Body)
				}
			}
			if sent != 1 {
				t.Errorf("%d verification emails accepted for one address within a minute, want 1", sent)
			}
			s.Mailbox.WaitFor(t, 1, 5*time.Second)
			time.Sleep(50 * time.Millisecond) // let a wrongly queued second email arrive
			if n := len(s.Mailbox.Messages()); n != 1 {
				t.Errorf("%d emails in the inbox, want 1", n)
			}

			// A minute later the address may have another.
			s.Clock.Advance(time.Minute)
			p.SetIdentity("claimant-0", inbox, false)
			c := s.NewClient(authtest.Header)
			wantOK(t, "provider sign-in", c.SignInWithProvider(p))
			if res := c.SendVerificationEmail(); res.Status != "OK" {
				t.Errorf("a minute later: %d %s, want OK", res.StatusCode, res.Body)
			}
		})
	}
}
