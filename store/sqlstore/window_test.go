package sqlstore_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

// TestReuseWindowAcrossInstances presents one refresh token 30 times at
// once to three instances on one database, with the reuse window on, as
// tabs refreshing together behind a load balancer would. Every request
// gets the same successor, whichever instance answers it; the session
// lives on with that one token; and the old token, after the window, is
// theft.
func TestReuseWindowAcrossInstances(t *testing.T) {
	const (
		rounds     = 5
		goroutines = 30
		window     = 10 * time.Second
	)
	for _, b := range sharedBackends {
		t.Run(b.name, func(t *testing.T) {
			c := newCluster(t, b, auth.Config{RefreshReuseWindow: window})
			for round := range rounds {
				cl, _, userID := c.signUp(round%3, authtest.Header)
				_, tok := cl.Tokens()

				successor := ""
				for _, r := range c.refreshAtOnce(tok, goroutines) {
					switch {
					case r.err != nil:
						t.Fatalf("round %d: refresh on %d: %v", round, r.instance, r.err)
					case r.status != http.StatusOK || r.refresh == "":
						t.Fatalf("round %d: refresh on %d inside the window: %d %q, want 200 with a token", round, r.instance, r.status, r.message)
					case successor == "":
						successor = r.refresh
					case r.refresh != successor:
						t.Fatalf("round %d: instance %d handed out another successor than the first answer's", round, r.instance)
					}
				}
				for i, srv := range c.srv {
					if ss, err := srv.Auth.Sessions(t.Context(), userID); err != nil || len(ss) != 1 || ss[0].Generation != 1 {
						t.Fatalf("round %d: instance %d lists %v (%v), want the one session, refreshed once", round, i, ss, err)
					}
				}
				live := successor
				if round%2 == 1 {
					// The one successor is the session's one live token.
					res := c.wantRefresh((round+1)%3, successor, http.StatusOK, "")
					live = res.Header.Get("st-refresh-token")
					c.wantSession((round+2)%3, res.Header.Get("st-access-token"), userID)
				}
				// After the window the first token is theft, which ends the
				// session on every instance.
				c.clock.Advance(window)
				res := c.wantRefresh(round%3, tok, http.StatusUnauthorized, "token theft detected")
				want := auth.ReasonTheftAfterWindow
				if round%2 == 1 {
					want = auth.ReasonTheftStale
				}
				if got := res.Header.Get(auth.ReasonHeader); got != string(want) {
					t.Fatalf("round %d: the replay after the window: %s %q, want %q", round, auth.ReasonHeader, got, want)
				}
				res = c.wantRefresh((round+1)%3, live, http.StatusUnauthorized, "unauthorised")
				if got := res.Header.Get(auth.ReasonHeader); got != string(auth.ReasonTokenTheft) {
					t.Fatalf("round %d: the live token after theft: %s %q, want %q", round, auth.ReasonHeader, got, auth.ReasonTokenTheft)
				}
			}
		})
	}
}
