package auth_test

// Passwordless sign-in over HTTP, as the SDKs and a person see it: a code
// or a link mailed (or texted) to an address, typed or opened, and the
// session it opens; wrong, expired and foreign codes, replays, resends,
// concurrent use, the send allowances, account linking and phone numbers.
// The guessing bound is in passwordless_guess_test.go.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/store/memstore"
)

// ---- the helpers of the passwordless tests ----

// plServer starts a server that signs in by flow, with cfg besides.
func plServer(t testing.TB, flow passwordless.Flow, cfg auth.Config) *authtest.Server {
	t.Helper()
	cfg.Passwordless.Flow = flow
	return authtest.NewServer(t, cfg)
}

// plFlow is a flow as the browser that started it knows it.
type plFlow struct{ device, pre string }

// plPost posts body to a passwordless endpoint with c, as the SDKs do
// (rid passwordless), keeping what the answer hands out.
func plPost(c *authtest.Client, path string, body any) *authtest.Response {
	saved, had := c.Header["Rid"]
	c.Header.Set("rid", "passwordless")
	defer func() {
		if had {
			c.Header["Rid"] = saved
		} else {
			c.Header.Del("Rid")
		}
	}()
	return c.Do(http.MethodPost, "/auth"+path, body)
}

// plCreate starts a flow for an email address and checks the answer: OK,
// the flow's ids in the SDKs' form and the flow type, and nothing else.
func plCreate(t testing.TB, c *authtest.Client, email string) plFlow {
	t.Helper()
	res := plPost(c, "/signinup/code", map[string]any{"email": email})
	return plStarted(t, res)
}

// plStarted checks an answer of /signinup/code that started a flow.
func plStarted(t testing.TB, res *authtest.Response) plFlow {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("signinup/code: %d %s, want OK", res.StatusCode, res.Body)
	}
	keys := make([]string, 0, len(res.JSON))
	for k := range res.JSON {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"deviceId", "flowType", "preAuthSessionId", "status"}; !slices.Equal(keys, want) {
		t.Errorf("signinup/code answered the keys %v, want %v: %s", keys, want, res.Body)
	}
	f := plFlow{}
	f.device, _ = res.JSON["deviceId"].(string)
	f.pre, _ = res.JSON["preAuthSessionId"].(string)
	// The SDKs' forms: the device id is 32 bytes in standard base64 with
	// padding, the preAuthSessionId the URL-safe base64 of its SHA-256.
	device, err := base64.StdEncoding.Strict().DecodeString(f.device)
	if err != nil || len(device) != 32 {
		t.Errorf("deviceId %q is not 32 bytes of padded standard base64: %v", f.device, err)
	}
	sum := sha256.Sum256(device)
	if f.pre != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Errorf("preAuthSessionId %q is not the unpadded URL-safe base64 of the SHA-256 of deviceId %q", f.pre, f.device)
	}
	wantNoTokens(t, res)
	return f
}

// plFlowType is the flowType the SDKs know each flow by.
var plFlowType = map[passwordless.Flow]string{
	passwordless.Code:        "USER_INPUT_CODE",
	passwordless.Link:        "MAGIC_LINK",
	passwordless.CodeAndLink: "USER_INPUT_CODE_AND_MAGIC_LINK",
}

func plResend(c *authtest.Client, f plFlow) *authtest.Response {
	return plPost(c, "/signinup/code/resend", map[string]any{"deviceId": f.device, "preAuthSessionId": f.pre})
}

// plConsume types code into the page that started f.
func plConsume(c *authtest.Client, f plFlow, code string) *authtest.Response {
	return plPost(c, "/signinup/code/consume", map[string]any{
		"preAuthSessionId": f.pre, "deviceId": f.device, "userInputCode": code,
	})
}

// plOpen posts a link as the SDKs' link page does: the preAuthSessionId
// from the query, the link code from the fragment.
func plOpen(t testing.TB, c *authtest.Client, link string) *authtest.Response {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	return plPost(c, "/signinup/code/consume", map[string]any{
		"preAuthSessionId": u.Query().Get("preAuthSessionId"), "linkCode": u.Fragment,
	})
}

// plMail waits for the first message to address after the first after
// messages of the server's Mailbox.
func plMail(t testing.TB, s *authtest.Server, address string, after int) mailer.Message {
	t.Helper()
	for {
		msgs := s.Mailbox.Messages()
		for i := after; i < len(msgs); i++ {
			if msgs[i].To.Address == address {
				return msgs[i]
			}
		}
		s.Mailbox.WaitFor(t, len(msgs)+1, 5*time.Second)
	}
}

var (
	plCodeLine = regexp.MustCompile(`(?m)^\s*([0-9]{6})\s*$`)
	plLinkIn   = regexp.MustCompile(`https://[^\s"<>]+`)
)

// plCodeOf is the six-digit code of a message.
func plCodeOf(t testing.TB, m mailer.Message) string {
	t.Helper()
	sub := plCodeLine.FindStringSubmatch(m.Text)
	if sub == nil {
		t.Fatalf("no six-digit code in the message:\n%s", m.Text)
	}
	return sub[1]
}

// plLinkOf is the sign-in link of a message.
func plLinkOf(t testing.TB, m mailer.Message) string {
	t.Helper()
	link := plLinkIn.FindString(m.Text)
	u, err := url.Parse(link)
	if err != nil || link == "" || u.Query().Get("preAuthSessionId") == "" || u.Fragment == "" {
		t.Fatalf("no sign-in link in the message:\n%s", m.Text)
	}
	return link
}

// plStart starts a flow for email with c and returns it with the message
// it sent.
func plStart(t testing.TB, s *authtest.Server, c *authtest.Client, email string) (plFlow, mailer.Message) {
	t.Helper()
	before := len(s.Mailbox.Messages())
	f := plCreate(t, c, email)
	return f, plMail(t, s, email, before)
}

// plSignIn signs c in, or up, by code and returns the answer.
func plSignIn(t testing.TB, s *authtest.Server, c *authtest.Client, email string) *authtest.Response {
	t.Helper()
	f, m := plStart(t, s, c, email)
	return plConsume(c, f, plCodeOf(t, m))
}

// plWantUser checks an OK answer of /signinup/code/consume for a user
// whose only login is the passwordless one of email (or, if email starts
// with "+", of that phone number), and returns the user's id.
func plWantUser(t testing.TB, res *authtest.Response, contact string, created bool) string {
	t.Helper()
	if res.StatusCode != http.StatusOK || res.Status != "OK" {
		t.Fatalf("consume: %d %s, want OK", res.StatusCode, res.Body)
	}
	if got, ok := res.JSON["createdNewRecipeUser"].(bool); !ok || got != created {
		t.Errorf("createdNewRecipeUser %v, want %v: %s", res.JSON["createdNewRecipeUser"], created, res.Body)
	}
	var body struct {
		User struct {
			ID            string   `json:"id"`
			IsPrimaryUser bool     `json:"isPrimaryUser"`
			TenantIDs     []string `json:"tenantIds"`
			Emails        []string `json:"emails"`
			PhoneNumbers  []string `json:"phoneNumbers"`
			ThirdParty    []any    `json:"thirdParty"`
			LoginMethods  []struct {
				RecipeID     string   `json:"recipeId"`
				RecipeUserID string   `json:"recipeUserId"`
				TenantIDs    []string `json:"tenantIds"`
				Email        *string  `json:"email"`
				PhoneNumber  *string  `json:"phoneNumber"`
				Verified     bool     `json:"verified"`
				TimeJoined   int64    `json:"timeJoined"`
			} `json:"loginMethods"`
			TimeJoined int64 `json:"timeJoined"`
		} `json:"user"`
	}
	if err := json.Unmarshal(res.Body, &body); err != nil {
		t.Fatalf("consume: %v in %s", err, res.Body)
	}
	u := body.User
	phone := strings.HasPrefix(contact, "+") && !strings.Contains(contact, "@")
	wantEmails, wantPhones := []string{contact}, []string{}
	if phone {
		wantEmails, wantPhones = []string{}, []string{contact}
	}
	if u.ID == "" || !slices.Equal(u.TenantIDs, []string{"public"}) || !slices.Equal(u.Emails, wantEmails) ||
		!slices.Equal(u.PhoneNumbers, wantPhones) || len(u.ThirdParty) != 0 || u.TimeJoined == 0 {
		t.Errorf("user %s, want one with emails %q and phone numbers %q", res.Body, wantEmails, wantPhones)
	}
	if len(u.LoginMethods) != 1 {
		t.Fatalf("user with %d login methods, want 1: %s", len(u.LoginMethods), res.Body)
	}
	lm := u.LoginMethods[0]
	switch {
	case lm.RecipeID != "passwordless" || lm.RecipeUserID != u.ID || !slices.Equal(lm.TenantIDs, []string{"public"}) || lm.TimeJoined == 0:
		t.Errorf("login method %s, want the passwordless one of user %s", res.Body, u.ID)
	case phone && (lm.PhoneNumber == nil || *lm.PhoneNumber != contact || lm.Email != nil):
		t.Errorf("login method %s, want phone number %s and no email", res.Body, contact)
	case !phone && (lm.Email == nil || *lm.Email != contact || lm.PhoneNumber != nil || !lm.Verified):
		t.Errorf("login method %s, want email %s, verified, and no phone number", res.Body, contact)
	}
	return u.ID
}

// plWantStatus checks a refusal byte for byte, and that it started no
// session.
func plWantStatus(t testing.TB, what string, res *authtest.Response, body string) {
	t.Helper()
	wantReply(t, what, res.StatusCode, res.Body, http.StatusOK, body)
	if res.IssuedTokens() {
		t.Errorf("%s: the refusal issued tokens", what)
	}
}

// plWrong is the answer to the nth wrong code of a flow, n below five.
func plWrong(n int) string {
	return fmt.Sprintf(`{"status":"INCORRECT_USER_INPUT_CODE_ERROR","failedCodeInputAttemptCount":%d,"maximumCodeInputAttempts":5}`, n)
}

// plExpired is the answer to an expired code, the nth failure of its flow.
func plExpired(n int) string {
	return fmt.Sprintf(`{"status":"EXPIRED_USER_INPUT_CODE_ERROR","failedCodeInputAttemptCount":%d,"maximumCodeInputAttempts":5}`, n)
}

const plRestart = `{"status":"RESTART_FLOW_ERROR"}`

// plOther is a six-digit code that is none of codes.
func plOther(codes ...string) string {
	for n := 0; ; n++ {
		c := fmt.Sprintf("%06d", (n*7919+123457)%1_000_000)
		if !slices.Contains(codes, c) {
			return c
		}
	}
}

// ---- sign-up and sign-in ----

// In every transfer mode, by code and by link: a first sign-in makes a
// user with a verified passwordless login and opens a session that works
// on a protected route; the next one signs in to the same user.
func TestPasswordlessSignUpAndSignIn(t *testing.T) {
	for _, m := range authtest.Modes {
		for _, by := range []string{"code", "link"} {
			t.Run(m.String()+"/"+by, func(t *testing.T) {
				events := newEventLog()
				s := plServer(t, passwordless.CodeAndLink, auth.Config{OnEvent: events.record})
				email := s.NewEmail()
				signIn := func(created bool) string {
					t.Helper()
					c := s.NewClient(m)
					f, msg := plStart(t, s, c, email)
					link := plLinkOf(t, msg)
					// The link opens the SDKs' page with the flow's id and
					// the public tenant, the link code in the fragment.
					u, _ := url.Parse(link)
					if want := s.AuthConfig.AppURL + "/auth/verify"; u.Scheme+"://"+u.Host+u.Path != want ||
						u.Query().Get("preAuthSessionId") != f.pre || u.Query().Get("tenantId") != "public" || len(u.Query()) != 2 {
						t.Errorf("link %s, want %s?preAuthSessionId=%s&tenantId=public#...", link, want, f.pre)
					}
					var res *authtest.Response
					if by == "code" {
						res = plConsume(c, f, plCodeOf(t, msg))
					} else {
						// Opened in the browser the mail is read in.
						c = s.NewClient(m)
						res = plOpen(t, c, link)
					}
					uid := plWantUser(t, res, email, created)
					wantTokens(t, s, res, m, uid)
					wantSession(t, c, uid)
					if r := c.Refresh(); r.StatusCode != http.StatusOK {
						t.Errorf("refresh of the new session: %d %s", r.StatusCode, r.Body)
					}
					wantSession(t, c, uid)
					return uid
				}
				first := signIn(true)
				s.Clock.Advance(time.Minute)
				if again := signIn(false); again != first {
					t.Errorf("the second sign-in reached user %s, want %s", again, first)
				}
				u, err := s.Auth.UserByID(t.Context(), first)
				if err != nil || len(u.LoginMethods) != 1 || !u.LoginMethods[0].EmailVerified {
					t.Errorf("the user through the Go API: %+v, %v; want one verified login", u, err)
				}
				if n := len(events.of(auth.EventSignUp)); n != 1 {
					t.Errorf("%d sign_up events, want 1", n)
				}
				for _, e := range events.of(auth.EventSignIn) {
					if e.UserID != first || e.Method != store.MethodPasswordless || e.SessionHandle == "" {
						t.Errorf("sign_in event %+v, want one of user %s by passwordless", e, first)
					}
				}
				if n := len(events.waitFor(t, auth.EventPasswordlessCodeSent, 2, 5*time.Second)); n != 2 {
					t.Errorf("%d passwordless_code_sent events, want 2", n)
				}
			})
		}
	}
}

// Each flow setting sends what it says, names itself as the SDKs know it,
// and takes only what it sends.
func TestPasswordlessFlowTypes(t *testing.T) {
	for flow, wire := range plFlowType {
		t.Run(string(flow), func(t *testing.T) {
			s := plServer(t, flow, auth.Config{})
			c := s.NewClient(authtest.Header)
			email := s.NewEmail()
			before := len(s.Mailbox.Messages())
			res := plPost(c, "/signinup/code", map[string]any{"email": email})
			f := plStarted(t, res)
			if res.JSON["flowType"] != wire {
				t.Errorf("flowType %v, want %s", res.JSON["flowType"], wire)
			}
			msg := plMail(t, s, email, before)
			hasCode, hasLink := plCodeLine.MatchString(msg.Text), strings.Contains(msg.Text, "preAuthSessionId=")
			if hasCode != (flow != passwordless.Link) || hasLink != (flow != passwordless.Code) {
				t.Errorf("message of %s: code %v, link %v:\n%s", flow, hasCode, hasLink, msg.Text)
			}
			switch flow {
			case passwordless.Code:
				// A link code is refused, and the code signs in.
				res := plPost(c, "/signinup/code/consume", map[string]any{"preAuthSessionId": f.pre, "linkCode": strings.Repeat("A", 43)})
				wantMessage(t, res, http.StatusBadRequest, "this server signs in by code only: send the deviceId and userInputCode")
				plWantUser(t, plConsume(c, f, plCodeOf(t, msg)), email, true)
			case passwordless.Link:
				res := plConsume(c, f, "123456")
				wantMessage(t, res, http.StatusBadRequest, "this server signs in by link only: send the linkCode")
				plWantUser(t, plOpen(t, c, plLinkOf(t, msg)), email, true)
			default:
				plWantUser(t, plConsume(c, f, plCodeOf(t, msg)), email, true)
			}
		})
	}
}

// ---- wrong, expired, foreign and replayed codes ----

// Four wrong codes are counted out of five; the fifth ends the flow, and
// then nothing of it works, not even its right code or its link.
func TestPasswordlessWrongCodes(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	c := s.NewClient(authtest.Header)
	email := s.NewEmail()
	f, msg := plStart(t, s, c, email)
	code := plCodeOf(t, msg)
	wrong := plOther(code)
	for n := 1; n <= 4; n++ {
		plWantStatus(t, fmt.Sprintf("wrong code %d", n), plConsume(c, f, wrong), plWrong(n))
	}
	plWantStatus(t, "wrong code 5", plConsume(c, f, wrong), plRestart)
	plWantStatus(t, "the right code after the fifth wrong one", plConsume(c, f, code), plRestart)
	plWantStatus(t, "the link after the fifth wrong code", plOpen(t, s.NewClient(authtest.Header), plLinkOf(t, msg)), plRestart)
	plWantStatus(t, "resend after the fifth wrong code", plResend(c, f), plRestart)
	if _, err := s.Auth.UserByEmail(t.Context(), email); err == nil {
		t.Error("a user was made for the address")
	}

	// Typed codes are compared as digits after trimming spaces: the code
	// with spaces around works, and with one digit changed it does not.
	f, msg = plStart(t, s, c, email)
	code = plCodeOf(t, msg)
	changed := []byte(code)
	changed[5] = '0' + (changed[5]-'0'+1)%10
	plWantStatus(t, "the code one digit off", plConsume(c, f, string(changed)), plWrong(1))
	plWantStatus(t, "the code and a letter", plConsume(c, f, code+"a"), plWrong(2))
	plWantUser(t, plConsume(c, f, " "+code+" "), email, true)
}

// An expired code counts as a failure of its flow, which lives on; so
// does an expired link, which counts nothing.
func TestPasswordlessExpiredCode(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	c := s.NewClient(authtest.Header)

	// Just inside the lifetime, the code works.
	inside := s.NewEmail()
	f, msg := plStart(t, s, c, inside)
	s.Clock.Advance(passwordless.DefaultCodeLifetime - time.Second)
	plWantUser(t, plConsume(c, f, plCodeOf(t, msg)), inside, true)

	email := s.NewEmail()
	f, msg = plStart(t, s, c, email)
	code, link := plCodeOf(t, msg), plLinkOf(t, msg)
	s.Clock.Advance(passwordless.DefaultCodeLifetime)
	plWantStatus(t, "the expired code", plConsume(c, f, code), plExpired(1))
	plWantStatus(t, "the expired link", plOpen(t, s.NewClient(authtest.Header), link), plRestart)
	plWantStatus(t, "a wrong code after them", plConsume(c, f, plOther(code)), plWrong(2))
	plWantStatus(t, "the expired code again", plConsume(c, f, code), plExpired(3))
	// The flow lives on: a resend brings a code that works.
	before := len(s.Mailbox.Messages())
	plWantStatus(t, "resend", plResend(c, f), okBody)
	plWantUser(t, plConsume(c, f, plCodeOf(t, plMail(t, s, email, before))), email, true)
}

// A code works only in its own flow: typed into another flow it is a
// wrong code there, and the flow it belongs to still takes it. Ids that
// do not belong together name no flow.
func TestPasswordlessCodeOfAnotherFlow(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	email := s.NewEmail()
	ca, cb := s.NewClient(authtest.Header), s.NewClient(authtest.Header)
	a, ma := plStart(t, s, ca, email)
	var b plFlow
	var mb mailer.Message
	for {
		b, mb = plStart(t, s, cb, email)
		if plCodeOf(t, mb) != plCodeOf(t, ma) {
			break // one chance in a million that they are alike
		}
	}
	codeA, codeB := plCodeOf(t, ma), plCodeOf(t, mb)
	plWantStatus(t, "A's code in B", plConsume(cb, b, codeA), plWrong(1))
	// A's device with B's id, and the other way round: no flow, and
	// nothing counted.
	plWantStatus(t, "A's device with B's preAuthSessionId", plConsume(ca, plFlow{a.device, b.pre}, codeA), plRestart)
	plWantStatus(t, "B's device with A's preAuthSessionId", plConsume(cb, plFlow{b.device, a.pre}, codeB), plRestart)
	// A's link code under B's id: refused, counts nothing.
	ua, _ := url.Parse(plLinkOf(t, ma))
	plWantStatus(t, "A's link code with B's preAuthSessionId",
		plPost(cb, "/signinup/code/consume", map[string]any{"preAuthSessionId": b.pre, "linkCode": ua.Fragment}), plRestart)
	plWantStatus(t, "a wrong code in B", plConsume(cb, b, plOther(codeA, codeB)), plWrong(2))
	uid := plWantUser(t, plConsume(ca, a, codeA), email, true)
	wantSession(t, ca, uid)
}

// A link works once, in any browser.
func TestPasswordlessLinkReplay(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	email := s.NewEmail()
	starter := s.NewClient(authtest.Cookie)
	f, msg := plStart(t, s, starter, email)
	link := plLinkOf(t, msg)
	c := s.NewClient(authtest.Cookie)
	uid := plWantUser(t, plOpen(t, c, link), email, true)
	wantSession(t, c, uid)
	for _, m := range authtest.Modes {
		plWantStatus(t, "the link again, "+m.String(), plOpen(t, s.NewClient(m), link), plRestart)
	}
	plWantStatus(t, "the link again, in the browser it signed in", plOpen(t, c, link), plRestart)
	plWantStatus(t, "the code of the same message", plConsume(starter, f, plCodeOf(t, msg)), plRestart)
	wantSession(t, c, uid)
}

// A sign-in ends every flow of its address: their codes, links and
// resends are refused. Flows of other addresses carry on.
func TestPasswordlessSuccessEndsOtherFlows(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	email, other := s.NewEmail(), s.NewEmail()
	var flows []plFlow
	var msgs []mailer.Message
	var clients []*authtest.Client
	for range 3 {
		c := s.NewClient(authtest.Header)
		f, m := plStart(t, s, c, email)
		flows, msgs, clients = append(flows, f), append(msgs, m), append(clients, c)
	}
	oc := s.NewClient(authtest.Header)
	of, om := plStart(t, s, oc, other)

	plWantUser(t, plConsume(clients[1], flows[1], plCodeOf(t, msgs[1])), email, true)
	plWantStatus(t, "the code of an earlier flow", plConsume(clients[0], flows[0], plCodeOf(t, msgs[0])), plRestart)
	plWantStatus(t, "the link of a later flow", plOpen(t, s.NewClient(authtest.Header), plLinkOf(t, msgs[2])), plRestart)
	plWantStatus(t, "resend of a later flow", plResend(clients[2], flows[2]), plRestart)
	plWantStatus(t, "the code of a later flow", plConsume(clients[2], flows[2], plCodeOf(t, msgs[2])), plRestart)
	plWantUser(t, plConsume(oc, of, plCodeOf(t, om)), other, true)
}

// A resend mails another code of the same flow; every code sent works
// until it expires, and the flow's first success ends them all. A flow
// that ended, or expired, takes no resend.
func TestPasswordlessResend(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	c := s.NewClient(authtest.Header)

	// resent starts a flow for a new address and resends once; it returns
	// the flow, the address and both messages.
	resent := func() (plFlow, string, mailer.Message, mailer.Message) {
		t.Helper()
		email := s.NewEmail()
		f, first := plStart(t, s, c, email)
		before := len(s.Mailbox.Messages())
		plWantStatus(t, "resend", plResend(c, f), okBody)
		second := plMail(t, s, email, before)
		if plCodeOf(t, first) == plCodeOf(t, second) {
			t.Errorf("a resend mailed the code the flow was sent already")
		}
		if u1, u2 := plLinkOf(t, first), plLinkOf(t, second); u1 == u2 {
			t.Errorf("a resend mailed the same link")
		}
		return f, email, first, second
	}

	// The new code works.
	f, email, first, second := resent()
	plWantUser(t, plConsume(c, f, plCodeOf(t, second)), email, true)
	plWantStatus(t, "the old code after the new one signed in", plConsume(c, f, plCodeOf(t, first)), plRestart)
	plWantStatus(t, "resend of a flow that signed in", plResend(c, f), plRestart)

	// The old code works too.
	f, email, first, second = resent()
	plWantUser(t, plConsume(c, f, plCodeOf(t, first)), email, true)
	plWantStatus(t, "the new link after the old code signed in", plOpen(t, c, plLinkOf(t, second)), plRestart)

	// Each code expires in its own time: the first, sent ten minutes
	// before the second, has expired when the second still works.
	email = s.NewEmail()
	f, first = plStart(t, s, c, email)
	s.Clock.Advance(10 * time.Minute)
	before := len(s.Mailbox.Messages())
	plWantStatus(t, "resend after ten minutes", plResend(c, f), okBody)
	second = plMail(t, s, email, before)
	s.Clock.Advance(6 * time.Minute)
	plWantStatus(t, "the first code, sixteen minutes old", plConsume(c, f, plCodeOf(t, first)), plExpired(1))
	plWantUser(t, plConsume(c, f, plCodeOf(t, second)), email, true)

	// A flow lasts four code lifetimes: resends keep it no longer.
	email = s.NewEmail()
	f, _ = plStart(t, s, c, email)
	for range 3 {
		s.Clock.Advance(passwordless.DefaultCodeLifetime)
		plWantStatus(t, "resend inside the flow's hour", plResend(c, f), okBody)
	}
	s.Clock.Advance(passwordless.DefaultCodeLifetime)
	plWantStatus(t, "resend of a flow past its hour", plResend(c, f), plRestart)

	// A resend needs the device id, as the typed code does.
	f, _ = plStart(t, s, c, s.NewEmail())
	plWantStatus(t, "resend by preAuthSessionId alone",
		plPost(c, "/signinup/code/resend", map[string]any{"deviceId": "", "preAuthSessionId": f.pre}), plRestart)
	plWantStatus(t, "resend with another device",
		plPost(c, "/signinup/code/resend", map[string]any{"deviceId": base64.StdEncoding.EncodeToString(make([]byte, 32)), "preAuthSessionId": f.pre}), plRestart)
}

// ---- concurrent use ----

// plRace sends one consumption from each of the servers' URLs at once,
// n in all, and returns the answers.
func plRace(t *testing.T, servers []*authtest.Server, n int, body string) []*authtest.Response {
	t.Helper()
	answers := make([]*authtest.Response, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		s := servers[i%len(servers)]
		hc := s.Client()
		wg.Go(func() {
			<-start
			answers[i], errs[i] = sendTo(hc, s.URL, http.MethodPost, "/auth/signinup/code/consume", body,
				hdr("Content-Type", "application/json", "rid", "passwordless", "st-auth-mode", "header"))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("consumption %d: %v", i, err)
		}
	}
	return answers
}

// plOneWinner checks that exactly one of answers signed in, and returns
// the others' bodies by count.
func plOneWinner(t *testing.T, answers []*authtest.Response) (winner *authtest.Response, others map[string]int) {
	t.Helper()
	others = map[string]int{}
	for _, res := range answers {
		if res.StatusCode == http.StatusOK && res.Status == "OK" {
			if winner != nil {
				t.Errorf("two sessions from one code:\n%s\n%s", winner.Body, res.Body)
			}
			winner = res
			continue
		}
		if res.IssuedTokens() {
			t.Errorf("a refusal issued tokens: %d %s", res.StatusCode, res.Body)
		}
		others[fmt.Sprintf("%d %s", res.StatusCode, res.Body)]++
	}
	if winner == nil {
		t.Fatalf("no consumption signed in: %v", others)
	}
	return winner, others
}

// plGatedStore is a memstore whose UsePasswordlessCode calls wait, once
// gate is set, until gate lets them on: so that a test can have
// consumptions reach the store at the same moment. It keeps the
// memstore's rate-limit methods, so servers sharing it share their
// allowances.
type plGatedStore struct {
	*memstore.Store
	mu      sync.Mutex
	arrived int
	gate    func(arrived int) bool // whether the calls so far may go on
	open    chan struct{}
}

func newPLGatedStore() *plGatedStore {
	return &plGatedStore{Store: memstore.New(), open: make(chan struct{})}
}

// hold makes the next calls wait until gate reports true; poke makes it
// look again.
func (s *plGatedStore) hold(gate func(arrived int) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.arrived, s.open = gate, 0, make(chan struct{})
}

func (s *plGatedStore) poke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil && s.gate(s.arrived) {
		s.gate = nil
		close(s.open)
	}
}

func (s *plGatedStore) UsePasswordlessCode(ctx context.Context, flow, code store.TokenHash, now time.Time, maxAttempts int) (store.Code, error) {
	s.mu.Lock()
	s.arrived++
	open := s.open
	s.mu.Unlock()
	s.poke()
	select {
	case <-open:
	case <-time.After(10 * time.Second):
		// The test reports what it got; a hang reports nothing.
	}
	return s.Store.UsePasswordlessCode(ctx, flow, code, now, maxAttempts)
}

// plRaceServers starts n servers on one gated store and one clock, all
// mailing to one Mailbox, that sign in by code and link.
func plRaceServers(t *testing.T, n int, cfg auth.Config) ([]*authtest.Server, *plGatedStore, *authtest.Mailbox) {
	t.Helper()
	st := newPLGatedStore()
	mb := authtest.NewMailbox()
	cfg.Store, cfg.Now, cfg.Email.Mailer = st, authtest.NewClock(authtest.Start).Now, mb
	cfg.Passwordless.Flow = passwordless.CodeAndLink
	var servers []*authtest.Server
	for range n {
		servers = append(servers, authtest.NewServer(t, cfg))
	}
	return servers, st, mb
}

// plRaceBody starts a flow for email and returns the consume body of its
// code or its link.
func plRaceBody(t *testing.T, s *authtest.Server, mb *authtest.Mailbox, email, by string) string {
	t.Helper()
	before := len(mb.Messages())
	f := plCreate(t, s.NewClient(authtest.Header), email)
	msg := mb.WaitFor(t, before+1, 5*time.Second)[before]
	var body []byte
	if by == "code" {
		body, _ = json.Marshal(map[string]string{"preAuthSessionId": f.pre, "deviceId": f.device, "userInputCode": plCodeOf(t, msg)})
	} else {
		u, _ := url.Parse(plLinkOf(t, msg))
		body, _ = json.Marshal(map[string]string{"preAuthSessionId": f.pre, "linkCode": u.Fragment})
	}
	return string(body)
}

// Sixteen consumptions of one code reach the store at the same moment,
// on one server and on two servers sharing a store, by code and by link:
// exactly one signs in, and every other is told to start again. (The
// failure allowance is raised so that all sixteen typed codes get as far
// as the store; at the default, see the test below.)
func TestPasswordlessConcurrentConsume(t *testing.T) {
	for _, n := range []int{1, 2} {
		for _, by := range []string{"code", "link"} {
			t.Run(fmt.Sprintf("%d servers/%s", n, by), func(t *testing.T) {
				servers, st, mb := plRaceServers(t, n, auth.Config{RateLimits: auth.RateLimits{
					PasswordlessFailures: auth.Rate{Burst: 100, Every: time.Minute},
				}})
				email := "race@example.com"
				body := plRaceBody(t, servers[0], mb, email, by)
				st.hold(func(arrived int) bool { return arrived == 16 })
				winner, others := plOneWinner(t, plRace(t, servers, 16, body))
				if len(others) != 1 || others["200 "+plRestart] != 15 {
					t.Errorf("the 15 others answered %v, want 200 %s each", others, plRestart)
				}
				uid := plWantUser(t, winner, email, true)
				access := winner.Header.Get("St-Access-Token")
				for _, s := range servers {
					c := s.NewClient(authtest.Header)
					c.SetTokens(access, "")
					wantSession(t, c, uid)
				}
				sessions, err := st.UserSessions(t.Context(), uid, authtest.Start)
				if err != nil || len(sessions) != 1 {
					t.Errorf("the user has %d sessions (%v), want 1", len(sessions), err)
				}
				if logins, _ := st.LoginsByEmail(t.Context(), email); len(logins) != 1 {
					t.Errorf("%d logins of %s, want 1: %+v", len(logins), email, logins)
				}
			})
		}
	}
}

// At the default allowance of 10 failures, a typed code is counted as a
// failure while it is being checked, and given back if it was right: of
// sixteen typed right codes in flight at once, ten are checked (one
// signs in, nine find the flow ended) and six are refused unchecked, as
// guesses past the allowance would be; across two servers alike, as they
// share the allowance through the store. Nothing of it is left spent.
func TestPasswordlessConcurrentConsumeAtTheAllowance(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d servers", n), func(t *testing.T) {
			events := newEventLog()
			servers, st, mb := plRaceServers(t, n, auth.Config{OnEvent: events.record})
			email := "race@example.com"
			body := plRaceBody(t, servers[0], mb, email, "code")
			// The ten hold their allowance until the six are refused.
			st.hold(func(arrived int) bool {
				return arrived == 10 && len(events.of(auth.EventSignInThrottled)) == 6
			})
			go func() {
				for range 1000 {
					if len(events.of(auth.EventSignInThrottled)) >= 6 {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				st.poke()
			}()
			winner, others := plOneWinner(t, plRace(t, servers, 16, body))
			refused := `200 {"status":"GENERAL_ERROR","message":"Too many wrong codes were entered for this address. Please open the link in the latest email, or try again in 6 minutes."}`
			if len(others) != 2 || others["200 "+plRestart] != 9 || others[refused] != 6 {
				t.Errorf("the 15 others answered %v, want 9 %s and 6 %s", others, plRestart, refused)
			}
			plWantUser(t, winner, email, true)
			// The ten were given back: new flows take ten wrong codes
			// (two flows' worth) before the eleventh is refused.
			c := servers[n-1].NewClient(authtest.Header)
			var f plFlow
			for i := range 11 {
				if i%5 == 0 {
					before := len(mb.Messages())
					f = plCreate(t, c, email)
					mb.WaitFor(t, before+1, 5*time.Second)
				}
				res := plConsume(c, f, "000000")
				checked := res.Status == "INCORRECT_USER_INPUT_CODE_ERROR" || res.Status == "RESTART_FLOW_ERROR"
				if checked != (i < 10) {
					t.Errorf("wrong code %d after the race: %d %s, want it checked: %v", i+1, res.StatusCode, res.Body, i < 10)
				}
			}
		})
	}
}

// ---- the send allowances ----

// An address is sent a first code and a few resends, then is asked to
// wait, whoever asks and however; the wait is what RateLimits.
// PasswordlessSends says, and nothing is mailed past it.
func TestPasswordlessSendsPerAddress(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{TrustedProxies: loopbackProxy})
	email := s.NewEmail()
	c := fromClient(s.NewClient(authtest.Header), "198.51.100.1")
	f := plCreate(t, c, email)
	// Within a minute: two resends, another browser's new flow, and a
	// resend of it, five codes in all.
	for i := range 2 {
		s.Clock.Advance(10 * time.Second)
		plWantStatus(t, fmt.Sprintf("resend %d", i+1), plResend(c, f), okBody)
	}
	c2 := fromClient(s.NewClient(authtest.Header), "198.51.100.2")
	f2 := plCreate(t, c2, " "+strings.ToUpper(email)+" ")
	plWantStatus(t, "resend of the second flow", plResend(c2, f2), okBody)
	s.Mailbox.WaitFor(t, 5, 5*time.Second)

	// The sixth code: refused to either flow, and to a new one from a
	// third browser, with the wait in words. The five were sent within
	// 20 seconds: the next is due 5 minutes after the first.
	wait := `{"status":"GENERAL_ERROR","message":"Several codes were sent to this address a moment ago. Please use the latest, or try again in %s."}`
	plWantStatus(t, "a third resend", plResend(c, f), fmt.Sprintf(wait, "5 minutes"))
	plWantStatus(t, "resend of the second flow", plResend(c2, f2), fmt.Sprintf(wait, "5 minutes"))
	c3 := fromClient(s.NewClient(authtest.Header), "198.51.100.3")
	plWantStatus(t, "a new flow from a third browser", plPost(c3, "/signinup/code", map[string]any{"email": email}), fmt.Sprintf(wait, "5 minutes"))
	s.Clock.Advance(4*time.Minute + 30*time.Second)
	plWantStatus(t, "resend half a minute early", plResend(c, f), fmt.Sprintf(wait, "10 seconds"))

	// Another address is not affected.
	plCreate(t, c3, s.NewEmail())

	// One more comes back after five minutes from the first.
	s.Clock.Advance(10 * time.Second)
	plWantStatus(t, "resend five minutes after the first code", plResend(c, f), okBody)
	plWantStatus(t, "and one more", plResend(c, f), fmt.Sprintf(wait, "5 minutes"))

	// Nothing past the allowance was mailed: 5 + 1 codes to the address,
	// 1 to the other.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Auth.Close(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range s.Mailbox.Messages() {
		if m.To.Address == email {
			n++
		}
	}
	if n != 6 {
		t.Errorf("%d codes mailed to %s, want 6", n, email)
	}
}

// One client is sent at most RateLimits.ClientPasswordlessSends codes,
// to any addresses: the next is a 429 with Retry-After, sends nothing,
// and other clients carry on.
func TestPasswordlessSendsPerClient(t *testing.T) {
	s := plServer(t, passwordless.Code, auth.Config{TrustedProxies: loopbackProxy})
	c := fromClient(s.NewClient(authtest.Header), "203.0.113.7")
	var last plFlow
	for i := range 20 {
		if i == 10 {
			// Resends count too.
			plWantStatus(t, "resend", plResend(c, last), okBody)
			continue
		}
		last = plCreate(t, c, fmt.Sprintf("client-%d@example.com", i))
	}
	mailed := len(s.Mailbox.WaitFor(t, 20, 5*time.Second))
	for _, res := range []*authtest.Response{
		plPost(c, "/signinup/code", map[string]any{"email": "client-20@example.com"}),
		plResend(c, last),
	} {
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "30" {
			t.Errorf("the 21st send from one client: %d Retry-After %q %s; want 429 with Retry-After 30",
				res.StatusCode, res.Header.Get("Retry-After"), res.Body)
		}
		wantMessage(t, res, http.StatusTooManyRequests, "too many attempts, try again later")
	}
	plCreate(t, fromClient(s.NewClient(authtest.Header), "203.0.113.8"), "client-20@example.com")
	s.Clock.Advance(30 * time.Second)
	plCreate(t, c, "client-21@example.com")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Auth.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Mailbox.Messages()); n != mailed+2 {
		t.Errorf("%d messages, want %d: the refused sends mailed something", n, mailed+2)
	}
}

// ---- account linking ----

// With account linking on, a passwordless sign-in proves its address: it
// evicts the maker of an unproven password login of it (the password
// stops working, its sessions end) and joins that user as the address's
// owner; it joins a user who proved the address without ending
// anything. With linking off, it makes a user of its own.
func TestPasswordlessLinking(t *testing.T) {
	t.Run("linking on, unproven password login", func(t *testing.T) {
		s := plServer(t, passwordless.CodeAndLink, auth.Config{AccountLinking: true, CheckSessionInStore: true})
		email := s.NewEmail()
		pw, uid := signUpWith(t, s, authtest.Header, email, authtest.Password)
		second := s.NewClient(authtest.Cookie)
		wantOK(t, "password sign-in", second.SignIn(email, authtest.Password))

		c := s.NewClient(authtest.Header)
		res := plSignIn(t, s, c, email)
		if got := wantOK(t, "passwordless sign-in", res); got != uid {
			t.Fatalf("the passwordless sign-in reached user %s, want the password user %s", got, uid)
		}
		if res.JSON["createdNewRecipeUser"] != true || userObject(t, res)["isPrimaryUser"] != true {
			t.Errorf("join: %s, want a new recipe user on a primary user", res.Body)
		}
		methods := map[string]bool{}
		for _, m := range loginMethodsOf(t, userObject(t, res)) {
			methods[fmt.Sprint(m["recipeId"])] = true
			if m["recipeId"] == "passwordless" && (m["verified"] != true || m["email"] != email) {
				t.Errorf("the passwordless login method %v, want %s verified", m, email)
			}
		}
		if !methods["emailpassword"] || !methods["passwordless"] || len(methods) != 2 {
			t.Errorf("login methods %v, want emailpassword and passwordless", methods)
		}
		wantSession(t, c, uid)
		// The stranger who may have made the password login is out.
		if r := s.NewClient(authtest.Header).SignIn(email, authtest.Password); r.Status == "OK" {
			t.Errorf("the unproven password still signs in: %s", r.Body)
		}
		for i, old := range []*authtest.Client{pw, second} {
			if r := old.Get("/api/session"); r.StatusCode != http.StatusUnauthorized {
				t.Errorf("session %d from before: %d %s, want 401", i+1, r.StatusCode, r.Body)
			}
			if r := old.Refresh(); r.StatusCode != http.StatusUnauthorized {
				t.Errorf("session %d from before refreshes: %d %s", i+1, r.StatusCode, r.Body)
			}
		}
		for _, l := range loginsWithEmail(t, s.AuthConfig.Store, email) {
			if l.Method == store.MethodPasswordless && (!l.OwnsEmail || !l.EmailProven) {
				t.Errorf("the passwordless login %+v, want it to own and prove %s", l, email)
			}
		}
		// The next passwordless sign-in is a sign-in.
		res = plSignIn(t, s, s.NewClient(authtest.Header), email)
		if wantOK(t, "second passwordless sign-in", res) != uid || res.JSON["createdNewRecipeUser"] != false {
			t.Errorf("second passwordless sign-in: %s, want user %s, not created", res.Body, uid)
		}
	})

	t.Run("linking on, proven password login", func(t *testing.T) {
		s := plServer(t, passwordless.CodeAndLink, auth.Config{AccountLinking: true, CheckSessionInStore: true})
		pw, u := s.SignedInVerified(authtest.Header)
		res := plSignIn(t, s, s.NewClient(authtest.Header), u.Email)
		if got := wantOK(t, "passwordless sign-in", res); got != u.ID || res.JSON["createdNewRecipeUser"] != true {
			t.Fatalf("passwordless sign-in: %s, want a new login of user %s", res.Body, u.ID)
		}
		wantSession(t, pw, u.ID)
		wantOK(t, "password sign-in", s.NewClient(authtest.Header).SignIn(u.Email, authtest.Password))
	})

	t.Run("linking on, provider login", func(t *testing.T) {
		s, p := linkingServer(t, true, auth.Config{Passwordless: passwordless.Config{Flow: passwordless.Code}})
		email := s.NewEmail()
		p.SetIdentity("pl-provider", email, true)
		tp := s.NewClient(authtest.Header)
		uid := wantOK(t, "provider sign-up", tp.SignInWithProvider(p))
		res := plSignIn(t, s, s.NewClient(authtest.Header), email)
		if got := wantOK(t, "passwordless sign-in", res); got != uid {
			t.Errorf("passwordless sign-in reached %s, want the provider's user %s", got, uid)
		}
		wantSession(t, tp, uid)
	})

	t.Run("linking off", func(t *testing.T) {
		s := plServer(t, passwordless.CodeAndLink, auth.Config{})
		email := s.NewEmail()
		pw, uid := signUpWith(t, s, authtest.Header, email, authtest.Password)
		c := s.NewClient(authtest.Header)
		other := plWantUser(t, plSignIn(t, s, c, email), email, true)
		if other == uid {
			t.Fatalf("with linking off, the passwordless sign-in joined the password user %s", uid)
		}
		wantSession(t, pw, uid)
		wantSession(t, c, other)
		if got := wantOK(t, "password sign-in", s.NewClient(authtest.Header).SignIn(email, authtest.Password)); got != uid {
			t.Errorf("the password now signs in to %s, want %s", got, uid)
		}
		for _, l := range loginsWithEmail(t, s.AuthConfig.Store, email) {
			if l.OwnsEmail {
				t.Errorf("login %+v owns %s with linking off", l, email)
			}
		}
	})
}

// ---- phone numbers ----

// plTexts is a TextSender that keeps every message.
type plTexts struct {
	mu   sync.Mutex
	msgs []passwordless.TextMessage
	sent chan struct{}
}

func newPLTexts() *plTexts { return &plTexts{sent: make(chan struct{}, 100)} }

// all returns the messages sent so far.
func (p *plTexts) all() []passwordless.TextMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

func (p *plTexts) SendText(_ context.Context, m passwordless.TextMessage) error {
	p.mu.Lock()
	p.msgs = append(p.msgs, m)
	p.mu.Unlock()
	select {
	case p.sent <- struct{}{}:
	default: // nobody is waiting for this many
	}
	return nil
}

// next waits for the next message.
func (p *plTexts) next(t testing.TB) passwordless.TextMessage {
	t.Helper()
	select {
	case <-p.sent:
	case <-time.After(5 * time.Second):
		t.Fatal("no text message after 5s")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.msgs[len(p.msgs)-1]
}

// With a TextSender, a phone number signs in end to end: the code and
// the link come in a text message to the number in E.164 form, nothing is
// mailed, and the user has the number and no email.
func TestPasswordlessPhone(t *testing.T) {
	texts := newPLTexts()
	s := plServer(t, passwordless.CodeAndLink, auth.Config{Passwordless: passwordless.Config{TextSender: texts}})
	const number = "+14155550100"
	c := s.NewClient(authtest.Body)
	f := plStarted(t, plPost(c, "/signinup/code", map[string]any{"phoneNumber": "+1 (415) 555-0100"}))
	m := texts.next(t)
	if m.To != number || !regexp.MustCompile(`^[0-9]{6}$`).MatchString(m.Code) || m.ValidFor != "15 minutes" ||
		!strings.Contains(m.Link, "preAuthSessionId="+f.pre+"&tenantId=public#") {
		t.Fatalf("text message %+v, want a code and a link for the flow to %s", m, number)
	}
	res := plConsume(c, f, m.Code)
	uid := plWantUser(t, res, number, true)
	wantTokens(t, s, res, authtest.Body, uid)
	wantSession(t, c, uid)

	// Again, by link from another browser, in another spelling.
	c2 := s.NewClient(authtest.Cookie)
	plStarted(t, plPost(c2, "/signinup/code", map[string]any{"phoneNumber": " +1.415.555.0100 "}))
	m = texts.next(t)
	if got := plWantUser(t, plOpen(t, c2, m.Link), number, false); got != uid {
		t.Errorf("the second sign-in reached %s, want %s", got, uid)
	}
	wantSession(t, c2, uid)

	// Not a phone number: the SDKs' message.
	for _, bad := range []string{"4155550100", "+0 415 555 0100", "+1 415 555 01x0", "+1234567", "+" + strings.Repeat("1", 16), "+1\u00a0415"} {
		plWantStatus(t, "phone "+bad, plPost(c2, "/signinup/code", map[string]any{"phoneNumber": bad}),
			`{"status":"GENERAL_ERROR","message":"Phone number is invalid"}`)
	}
	res = c2.Get("/auth/passwordless/phonenumber/exists?phoneNumber=" + url.QueryEscape("+1 415 555 0100"))
	wantBody(t, res, `{"status":"OK","exists":true}`)
	res = c2.Get("/auth/passwordless/phonenumber/exists?phoneNumber=" + url.QueryEscape("+14155550101"))
	wantBody(t, res, `{"status":"OK","exists":false}`)
	if n := len(s.Mailbox.Messages()); n != 0 {
		t.Errorf("%d emails for phone sign-ins", n)
	}
}

// Without a TextSender a phone number is a bad request, and nothing is
// sent.
func TestPasswordlessPhoneWithoutSender(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	res := plPost(s.NewClient(authtest.Header), "/signinup/code", map[string]any{"phoneNumber": "+14155550100"})
	wantMessage(t, res, http.StatusBadRequest, "this server signs in by email only: send email, not phoneNumber")
}

// The exists endpoints answer for passwordless logins only: an address
// with a password login alone has none.
func TestPasswordlessExists(t *testing.T) {
	s := plServer(t, passwordless.Code, auth.Config{})
	_, pwUser := s.SignedIn(authtest.Header)
	email := s.NewEmail()
	c := s.NewClient(authtest.Header)
	ask := func(path, address string) *authtest.Response {
		return c.Get(path + url.QueryEscape(address))
	}
	for _, path := range []string{"/auth/passwordless/email/exists?email=", "/auth/signup/email/exists?email="} {
		c.Header.Set("rid", "passwordless")
		wantBody(t, ask(path, email), `{"status":"OK","exists":false}`)
		wantBody(t, ask(path, pwUser.Email), `{"status":"OK","exists":false}`)
	}
	c.Header.Del("rid")
	plWantUser(t, plSignIn(t, s, s.NewClient(authtest.Header), email), email, true)
	c.Header.Set("rid", "passwordless")
	wantBody(t, ask("/auth/passwordless/email/exists?email=", " "+strings.ToUpper(email)), `{"status":"OK","exists":true}`)
	wantBody(t, ask("/auth/signup/email/exists?email=", email), `{"status":"OK","exists":true}`)
	// The old path without the passwordless rid is email and password's.
	c.Header.Set("rid", "emailpassword")
	wantBody(t, ask("/auth/signup/email/exists?email=", email), `{"status":"OK","exists":false}`)
	wantBody(t, ask("/auth/signup/email/exists?email=", pwUser.Email), `{"status":"OK","exists":true}`)
}

// ---- addresses and lifetimes at the edges ----

// An email address may begin with "+" ("+alice@example.com" is a valid
// address, and the library takes it as one): it is mailed its code, and
// signs in as an email address, not as a phone number.
func TestPasswordlessEmailStartingWithPlus(t *testing.T) {
	for _, withTexts := range []bool{false, true} {
		t.Run(fmt.Sprintf("TextSender %v", withTexts), func(t *testing.T) {
			events := newEventLog()
			texts := newPLTexts()
			cfg := auth.Config{OnEvent: events.record}
			if withTexts {
				cfg.Passwordless.TextSender = texts
			}
			s := plServer(t, passwordless.CodeAndLink, cfg)
			const email = "+alice@example.com"
			c := s.NewClient(authtest.Header)
			f := plCreate(t, c, email)
			// The outbox reports the send, or its failure.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if len(events.of(auth.EventPasswordlessCodeSent))+len(events.of(auth.EventMailFailed)) > 0 {
					break
				}
			}
			if n := len(events.of(auth.EventMailFailed)); n != 0 {
				t.Fatalf("the code for %s was not sent (%d mail_failed events)", email, n)
			}
			if msgs := texts.all(); len(msgs) != 0 {
				t.Fatalf("the code for the email address %s went by text message to %q", email, msgs[0].To)
			}
			msg := plMail(t, s, email, 0)
			uid := plWantUser(t, plConsume(c, f, plCodeOf(t, msg)), email, true)
			u, err := s.Auth.UserByID(t.Context(), uid)
			if err != nil || u.Email != email {
				t.Errorf("the user through the Go API: %+v, %v; want the email %s", u, err, email)
			}
		})
	}
}

// A code mailed by a resend works for the lifetime its message states,
// however late in its flow's hour the resend came, and no longer: a resend
// 50 minutes in states the 10 minutes left of the flow's hour. Once less
// than a minute is left, a resend is refused, and the person starts a new
// flow.
func TestPasswordlessResendLateInTheFlow(t *testing.T) {
	s := plServer(t, passwordless.CodeAndLink, auth.Config{})
	c := s.NewClient(authtest.Header)
	email := s.NewEmail()
	f, _ := plStart(t, s, c, email)
	s.Clock.Advance(50 * time.Minute)
	before := len(s.Mailbox.Messages())
	plWantStatus(t, "resend 50 minutes into the flow", plResend(c, f), okBody)
	msg := plMail(t, s, email, before)
	if !strings.Contains(msg.Text, "within 10 minutes") {
		t.Fatalf("the message does not say the 10 minutes the code works:\n%s", msg.Text)
	}
	s.Clock.Advance(10*time.Minute - time.Second)
	plWantUser(t, plConsume(c, f, plCodeOf(t, msg)), email, true)

	// Another flow, resent in its last minute: refused.
	f, _ = plStart(t, s, c, email)
	s.Clock.Advance(59*time.Minute + 30*time.Second)
	plWantStatus(t, "resend 30 seconds before the flow ends", plResend(c, f), `{"status":"RESTART_FLOW_ERROR"}`)
}

// TestPasswordlessLinkURLWithQuery: a LinkURL with a query of its own
// keeps it, and the link's parameters follow it.
func TestPasswordlessLinkURLWithQuery(t *testing.T) {
	s := plServer(t, passwordless.Link, auth.Config{
		AppURL: "https://app.example.com", Passwordless: passwordless.Config{LinkURL: "https://app.example.com/verify?lang=fr"},
	})
	c := s.NewClient(authtest.Header)
	email := s.NewEmail()
	_, msg := plStart(t, s, c, email)
	link := authtest.PasswordlessLink(t, msg)
	if !strings.HasPrefix(link, "https://app.example.com/verify?lang=fr&preAuthSessionId=") {
		t.Fatalf("link %s, want the page's query kept and the flow's id after it", link)
	}
	plWantUser(t, s.NewClient(authtest.Cookie).ConsumeLink(link), email, true)
}
