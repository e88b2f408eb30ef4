package auth_test

// The guessing bound of passwordless sign-in, by running the attack: an
// attacker starts flows for one victim's address from many client
// addresses, piles codes into them with resends, and types wrong codes
// into them as fast as the server checks them, while the clock runs. The
// tests count the typed codes the server actually checked (in the store,
// and from the answers) and the live codes each check was against.

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// plCountingStore is a memstore that counts the typed codes checked: the
// calls of UsePasswordlessCode that count a failure (maxAttempts > 0).
// It keeps the memstore's rate-limit methods, the default Limiter's.
type plCountingStore struct {
	*memstore.Store
	checked atomic.Int64
}

func (s *plCountingStore) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	if maxAttempts > 0 {
		s.checked.Add(1)
	}
	return s.Store.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
}

// plAttackFlow is a flow the attacker started: its client, how many of
// its five attempts are spent, and when each of its codes was sent.
type plAttackFlow struct {
	f        plFlow
	c        *authtest.Client
	attempts int
	sent     []time.Time
}

// live is how many of the flow's codes are live at now.
func (a *plAttackFlow) live(now time.Time, lifetime time.Duration) int {
	n := 0
	for _, at := range a.sent {
		if now.Before(at.Add(lifetime)) {
			n++
		}
	}
	return n
}

// plAttack is the attacker's state and tally.
type plAttack struct {
	t       *testing.T
	s       *authtest.Server
	st      *plCountingStore
	victim  string
	clients int // client addresses used
	flows   []*plAttackFlow
	mailed  []string       // the codes mailed to the victim so far
	guess   int            // the attacker's next guess, as a number
	checked map[int]int    // typed codes checked, by hour
	covered map[int]int    // live codes those checks were against, by hour
	sends   map[int]int    // codes sent, by hour
	refused map[string]int // refusals seen, by answer
}

// client is a new client, from a client address not used before: the
// attacker has as many as it likes.
func (a *plAttack) client() *authtest.Client {
	a.clients++
	return fromClient(a.s.NewClient(authtest.Header), fmt.Sprintf("10.%d.%d.%d", a.clients>>16&255, a.clients>>8&255, a.clients&255))
}

// open is the flow the attacker types into: the newest, while it has
// attempts left.
func (a *plAttack) open() *plAttackFlow {
	if n := len(a.flows); n > 0 && a.flows[n-1].attempts < 5 {
		return a.flows[n-1]
	}
	return nil
}

// send tries to add a code to the open flow, or to start a flow: the
// attacker spends every send the server allows on the flow it guesses
// in, so that each guess meets as many live codes as it can.
func (a *plAttack) send(hour int) bool {
	before := len(a.s.Mailbox.Messages())
	fl := a.open()
	var res *authtest.Response
	if fl == nil {
		c := a.client()
		res = plPost(c, "/signinup/code", map[string]any{"email": a.victim})
		if res.Status == "OK" {
			fl = &plAttackFlow{f: plStarted(a.t, res), c: c}
			a.flows = append(a.flows, fl)
		}
	} else {
		res = plResend(a.client(), fl.f) // any client may resend, with the ids
	}
	switch {
	case res.StatusCode == http.StatusOK && res.Status == "OK":
		fl.sent = append(fl.sent, a.s.Clock.Now())
		a.sends[hour]++
		a.mailed = append(a.mailed, plCodeOf(a.t, plMail(a.t, a.s, a.victim, before)))
		return true
	case res.StatusCode == http.StatusOK && res.Status == "GENERAL_ERROR" && strings.HasPrefix(res.Message, "Several codes were sent"):
		a.refused["send: "+res.Message[:len("Several codes were sent")]]++
		return false
	}
	a.t.Fatalf("attacker's send: %d %s", res.StatusCode, res.Body)
	return false
}

// try types one wrong code into the open flow, from a new client
// address; it reports whether the server checked it.
func (a *plAttack) try(hour int) bool {
	fl := a.open()
	if fl == nil {
		return false
	}
	// A guess that is none of the codes mailed: the attack must not end
	// by luck, one chance in a million a guess (or more, with resends).
	var code string
	for {
		code = fmt.Sprintf("%06d", a.guess%1_000_000)
		a.guess += 7919
		if !slices.Contains(a.mailed, code) {
			break
		}
	}
	live := fl.live(a.s.Clock.Now(), passwordless.DefaultCodeLifetime)
	res := plConsume(a.client(), fl.f, code)
	if res.IssuedTokens() || res.Status == "OK" {
		a.t.Fatalf("a wrong code signed in: %s", res.Body)
	}
	switch res.Status {
	case "INCORRECT_USER_INPUT_CODE_ERROR", "EXPIRED_USER_INPUT_CODE_ERROR":
		fl.attempts++
		if got := int(res.JSON["failedCodeInputAttemptCount"].(float64)); got != fl.attempts {
			a.t.Fatalf("attempt %d of a flow answered %s", fl.attempts, res.Body)
		}
	case "RESTART_FLOW_ERROR":
		if fl.attempts != 4 {
			a.t.Fatalf("attempt %d of a flow ended it: %s", fl.attempts+1, res.Body)
		}
		fl.attempts = 5
	case "GENERAL_ERROR":
		if !strings.HasPrefix(res.Message, "Too many wrong codes were entered for this address.") {
			a.t.Fatalf("a guess: %s", res.Body)
		}
		a.refused["guess: Too many wrong codes"]++
		return false
	default:
		a.t.Fatalf("a guess: %d %s", res.StatusCode, res.Body)
	}
	a.checked[hour]++
	a.covered[hour] += live
	return true
}

// newPLAttack starts a server with the default limits behind a trusted
// proxy, and an attacker on it.
func newPLAttack(t *testing.T, flow passwordless.Flow) *plAttack {
	t.Helper()
	st := &plCountingStore{Store: memstore.New()}
	s := plServer(t, flow, auth.Config{Store: st, TrustedProxies: loopbackProxy})
	return &plAttack{t: t, s: s, st: st, victim: "victim@example.com", guess: 424242,
		checked: map[int]int{}, covered: map[int]int{}, sends: map[int]int{}, refused: map[string]int{}}
}

// sendAll sends as many codes as the server allows.
func (a *plAttack) sendAll(hour int) {
	for a.send(hour) {
	}
}

// tryAll types wrong codes until the server refuses one, starting new
// flows as flows end if it may.
func (a *plAttack) tryAll(hour int) {
	for a.try(hour) {
		if a.open() == nil && !a.send(hour) {
			return
		}
	}
}

// greedy runs the attack for hours, a round a minute: every send the
// server allows, piled into the open flow, then every guess it checks.
func (a *plAttack) greedy(hours int) {
	for minute := range hours * 60 {
		a.sendAll(minute / 60)
		a.tryAll(minute / 60)
		a.s.Clock.Advance(time.Minute)
	}
}

// patient runs the attack that meets the most live codes a guess: every
// half hour it piles the five sends the allowance has regained into a
// new flow, adds the sixth five minutes later, and then types the five
// guesses the failure allowance has regained into those six live codes.
func (a *plAttack) patient(hours int) {
	for minute := range hours * 60 {
		switch minute % 30 {
		case 0:
			a.sendAll(minute / 60)
		case 5:
			a.sendAll(minute / 60)
			for a.open() != nil && a.try(minute/60) {
			}
		}
		a.s.Clock.Advance(time.Minute)
	}
}

// report logs the tally, hour by hour, and returns the typed codes
// checked and the live codes they met in the hours after the first.
func (a *plAttack) report(name string, hours int) (checks, covered int) {
	for h := range hours {
		a.t.Logf("%s, hour %d: %2d typed codes checked, against %3d live codes (%.1f a check); %2d codes sent",
			name, h+1, a.checked[h], a.covered[h], float64(a.covered[h])/float64(max(1, a.checked[h])), a.sends[h])
		if h > 0 {
			checks += a.checked[h]
			covered += a.covered[h]
		}
	}
	a.t.Logf("%s: %d flows from %d client addresses; refused: %v", name, len(a.flows), a.clients, a.refused)
	total := 0
	for _, n := range a.checked {
		total += n
	}
	if n := int(a.st.checked.Load()); n != total {
		a.t.Errorf("%s: the store checked %d typed codes, the answers say %d", name, n, total)
	}
	return checks, covered
}

// The attack is cut off at RateLimits.PasswordlessFailures: with the
// defaults (10 at once, then one every 6 minutes), the attacker who
// guesses as fast as it may has 19 typed codes checked in the first hour
// and 10 in every hour after, however many flows and client addresses it
// uses. The sends (RateLimits.PasswordlessSends, 5 at once, then one
// every 5 minutes) bound the live codes a check is against: the patient
// attacker meets six a guess, 60 an hour, and no strategy more (each
// code sent meets at most the five checks of its flow, and 12 are sent
// an hour). The test logs the figures for SECURITY.md.
func TestPasswordlessGuessingBound(t *testing.T) {
	const hours = 4
	greedy := newPLAttack(t, passwordless.Code)
	greedy.greedy(hours)
	for h := range hours {
		want := 10
		if h == 0 {
			want = 19
		}
		if greedy.checked[h] != want {
			t.Errorf("greedy attacker, hour %d: %d typed codes checked, want %d", h+1, greedy.checked[h], want)
		}
		if wantSends := 12 + 4*btoi(h == 0); greedy.sends[h] != wantSends {
			t.Errorf("greedy attacker, hour %d: %d codes sent to the victim, want %d", h+1, greedy.sends[h], wantSends)
		}
	}
	if greedy.refused["guess: Too many wrong codes"] == 0 {
		t.Errorf("the attack was not cut off by the failure allowance: %v", greedy.refused)
	}
	greedy.report("greedy", hours)

	patient := newPLAttack(t, passwordless.Code)
	patient.patient(hours)
	checks, covered := patient.report("patient", hours)
	for h := 1; h < hours; h++ {
		if patient.checked[h] != 10 || patient.covered[h] != 60 {
			t.Errorf("patient attacker, hour %d: %d typed codes checked against %d live codes, want 10 against 60",
				h+1, patient.checked[h], patient.covered[h])
		}
	}
	perHour := float64(covered) / float64(hours-1)
	t.Logf("the bound, from the patient attacker's steady hours: %.0f typed codes an hour against %.0f live codes; "+
		"a hit expected after %.0f hours (%.1f years); 1%% chance within %.0f hours (%.1f days), 50%% within %.0f hours (%.1f years)",
		float64(checks)/float64(hours-1), perHour, 1e6/perHour, 1e6/perHour/24/365,
		-math.Log(0.99)*1e6/perHour, -math.Log(0.99)*1e6/perHour/24, math.Ln2*1e6/perHour, math.Ln2*1e6/perHour/24/365)
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Guesses that arrive all at once meet the same allowance: of 40 wrong
// codes typed at the same moment into eight flows, from 40 client
// addresses, exactly 10 are checked.
func TestPasswordlessGuessingAllAtOnce(t *testing.T) {
	st := &plCountingStore{Store: memstore.New()}
	s := plServer(t, passwordless.Code, auth.Config{Store: st, TrustedProxies: loopbackProxy,
		// Eight flows at once: the send allowance is not what this is about.
		RateLimits: auth.RateLimits{PasswordlessSends: auth.Rate{Burst: 8, Every: 5 * time.Minute}}})
	var flows []plFlow
	for i := range 8 {
		flows = append(flows, plCreate(t, fromClient(s.NewClient(authtest.Header), fmt.Sprintf("10.0.0.%d", i+1)), "victim@example.com"))
	}
	msgs := s.Mailbox.WaitFor(t, 8, 5*time.Second)
	var codes []string
	for _, m := range msgs {
		codes = append(codes, plCodeOf(t, m))
	}
	wrong := plOther(codes...)
	var wg sync.WaitGroup
	answers := make([]*authtest.Response, 40)
	start := make(chan struct{})
	for i := range 40 {
		f := flows[i%8]
		c := fromClient(s.NewClient(authtest.Header), fmt.Sprintf("10.0.1.%d", i+1))
		wg.Go(func() {
			<-start
			body := fmt.Sprintf(`{"preAuthSessionId":%q,"deviceId":%q,"userInputCode":%q}`, f.pre, f.device, wrong)
			answers[i], _ = sendTo(c.HTTP, s.URL, http.MethodPost, "/auth/signinup/code/consume", body,
				hdr("Content-Type", "application/json", "rid", "passwordless", "X-Forwarded-For", c.Header.Get("X-Forwarded-For")))
		})
	}
	close(start)
	wg.Wait()
	got := map[string]int{}
	for _, res := range answers {
		if res == nil {
			t.Fatal("a guess got no answer")
		}
		got[res.Status]++
	}
	if got["INCORRECT_USER_INPUT_CODE_ERROR"] != 10 || got["GENERAL_ERROR"] != 30 || st.checked.Load() != 10 {
		t.Errorf("answers %v, %d checked; want 10 checked and 30 refused unchecked", got, st.checked.Load())
	}
}

// While the attack goes on, the victim is refused new codes and its
// typed codes, as the attacker is; with links on, the link in the latest
// email, which the attacker had sent to a flow it has not spent, still
// signs the victim in, as the refusal says.
func TestPasswordlessGuessingVictimKeepsLinks(t *testing.T) {
	a := newPLAttack(t, passwordless.CodeAndLink)
	// Two flows spent with five wrong codes each, the ten the failure
	// allowance has; a third, with two resends, takes the rest of the
	// five sends.
	for range 2 {
		a.send(0)
		for a.open() != nil && a.try(0) {
		}
	}
	a.sendAll(0)
	if a.checked[0] != 10 || a.sends[0] != 5 || a.open() == nil {
		t.Fatalf("setup: %d checked, %d sent, want 10 and 5 and an open flow", a.checked[0], a.sends[0])
	}
	if a.try(0) {
		t.Fatal("an eleventh wrong code was checked")
	}
	victim := a.s.NewClient(authtest.Cookie)
	res := plPost(victim, "/signinup/code", map[string]any{"email": a.victim})
	if res.Status != "GENERAL_ERROR" || !strings.HasPrefix(res.Message, "Several codes were sent") {
		t.Fatalf("the victim's request for a code during the attack: %s, want GENERAL_ERROR", res.Body)
	}
	// Typed into the open flow, even its right code is refused unchecked.
	msgs := a.s.Mailbox.Messages()
	latest := msgs[len(msgs)-1]
	fl := a.open()
	res = plConsume(fl.c, fl.f, plCodeOf(t, latest))
	wantReply(t, "the right code past the failure allowance", res.StatusCode, res.Body, http.StatusOK,
		`{"status":"GENERAL_ERROR","message":"Too many wrong codes were entered for this address. Please open the link in the latest email, or try again in 6 minutes."}`)
	uid := plWantUser(t, plOpen(t, victim, plLinkOf(t, latest)), a.victim, true)
	wantSession(t, victim, uid)
}
