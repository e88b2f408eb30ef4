package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// PasswordlessFlow says what a passwordless sign-in sends: a code to type,
// a link to open, or both.
type PasswordlessFlow string

const (
	// PasswordlessOff, the zero value, serves no passwordless endpoints.
	PasswordlessOff PasswordlessFlow = ""
	// PasswordlessCode sends a six-digit code, typed into the page that
	// asked for it.
	PasswordlessCode PasswordlessFlow = "code"
	// PasswordlessLink sends a link that signs in when opened.
	PasswordlessLink PasswordlessFlow = "link"
	// PasswordlessCodeAndLink sends both; either signs in.
	PasswordlessCodeAndLink PasswordlessFlow = "code-and-link"
)

// DefaultPasswordlessCodeLifetime is how long a passwordless code or link
// works unless PasswordlessConfig.CodeLifetime says otherwise.
const DefaultPasswordlessCodeLifetime = 15 * time.Minute

const (
	// passwordlessAttempts is how many wrong or expired codes a flow takes
	// before it ends and the person starts again (the SDKs' default).
	passwordlessAttempts = 5
	// passwordlessFlowCodes is how many code lifetimes a flow lasts: the
	// first code and its resends belong to one flow for an hour by
	// default.
	passwordlessFlowCodes = 4
	// passwordlessCodeTries is how often a new code is drawn when it
	// happens to be one the flow has already been sent.
	passwordlessCodeTries = 3
)

// PasswordlessConfig configures sign-in with one-time codes and links sent
// by email, and by text message with a TextSender. The zero value means
// off. A passwordless sign-in proves the address (store.Login.EmailProven):
// its users are created with a verified email, and under
// Config.AccountLinking it joins the user who owns the address. Its email
// goes through Config.Email, which needs a Mailer.
type PasswordlessConfig struct {
	// Flow is what is sent: PasswordlessCode, PasswordlessLink or
	// PasswordlessCodeAndLink. Default off.
	Flow PasswordlessFlow

	// LinkURL is the page links open, with ?preAuthSessionId=...&
	// tenantId=public and the link code in the fragment added. Default
	// Config.AppURL + "/auth/verify", the page of the SuperTokens UI. The
	// page must consume the link with a POST, as the SDKs do: opening the
	// link spends nothing, so a mail scanner that fetches it does not
	// sign anyone in or use it up.
	LinkURL string

	// Email renders the email. Default DefaultPasswordlessEmail().
	Email *mailer.Template

	// CodeLifetime is how long a code or link works. Default
	// DefaultPasswordlessCodeLifetime, 15 minutes.
	CodeLifetime time.Duration

	// TextSender, if set, lets people sign in with a phone number, which
	// it sends the code or link to. Without one, a phone number is
	// refused (400). The library ships no sender: use your SMS
	// provider's API.
	TextSender TextSender
}

// A TextSender sends passwordless codes and links by text message.
type TextSender interface {
	// SendText sends m. Its error is logged and reported as
	// EventMailFailed; the outbox tries again as for email.
	SendText(ctx context.Context, m TextMessage) error
}

// TextMessage is a passwordless code or link to send by text message.
type TextMessage struct {
	To       string // the phone number, in E.164 form ("+14155550100")
	Code     string // the code to type; "" when Flow is PasswordlessLink
	Link     string // the link to open; "" when Flow is PasswordlessCode
	ValidFor string // how long they work, in words: "15 minutes"
}

// PasswordlessEmailData is what the passwordless email templates can
// show.
type PasswordlessEmailData struct {
	Email    string // the recipient, who signs in
	Code     string // the code to type; "" when Flow is PasswordlessLink
	Link     string // the link to open; "" when Flow is PasswordlessCode
	ValidFor string // how long they work, in words: "15 minutes"
}

func (c *PasswordlessConfig) setDefaults(appURL string, mailer bool) error {
	switch c.Flow {
	case PasswordlessOff:
		return nil
	case PasswordlessCode, PasswordlessLink, PasswordlessCodeAndLink:
	default:
		return fmt.Errorf("auth: Config.Passwordless.Flow %q is not one of \"\", %q, %q and %q",
			c.Flow, PasswordlessCode, PasswordlessLink, PasswordlessCodeAndLink)
	}
	if !mailer {
		return errors.New("auth: Config.Passwordless needs Config.Email.Mailer to send its codes")
	}
	setDefault(&c.LinkURL, strings.TrimRight(appURL, "/")+"/auth/verify")
	if u, err := url.Parse(c.LinkURL); err != nil || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("auth: Config.Passwordless.LinkURL %q is not an absolute URL without a fragment", c.LinkURL)
	}
	if c.Email == nil {
		t := DefaultPasswordlessEmail()
		c.Email = &t
	} else if c.Email.Subject == nil || c.Email.Text == nil {
		return errors.New("auth: Config.Passwordless.Email needs a Subject and a Text template")
	}
	setDefault(&c.CodeLifetime, DefaultPasswordlessCodeLifetime)
	if c.CodeLifetime < time.Minute {
		return errors.New("auth: Config.Passwordless.CodeLifetime must be at least a minute")
	}
	return nil
}

func (f PasswordlessFlow) codes() bool { return f == PasswordlessCode || f == PasswordlessCodeAndLink }
func (f PasswordlessFlow) links() bool { return f == PasswordlessLink || f == PasswordlessCodeAndLink }

// wire is the flowType the SDKs know the flow by.
func (f PasswordlessFlow) wire() string {
	switch f {
	case PasswordlessCode:
		return "USER_INPUT_CODE"
	case PasswordlessLink:
		return "MAGIC_LINK"
	}
	return "USER_INPUT_CODE_AND_MAGIC_LINK"
}

// A passwordless flow is known to the browser that started it by its
// device id, 32 random bytes that only that browser holds, and to
// everyone else (the link, the store) by its preAuthSessionId, the
// SHA-256 of the device id. Each send adds to the flow a code to type,
// six digits, and a link, with a random 256-bit link code; the store
// keeps a hash of each. A typed code's hash is of its HMAC under the
// device id, so a copy of the store tells no code without the id.
//
// A link code is random, not derived from the digits: whoever started
// the flow holds the device id, and could otherwise work out the link
// code of each of the million possible codes and try them all by the
// link path, which counts no attempts. The two hashes are of strings that
// cannot coincide (a link's is prefixed), so a link code never stands in
// for a typed code, nor the other way round.
type passwordlessFlow struct {
	device []byte          // nil when the request named the flow by preAuthSessionId alone
	hash   store.TokenHash // the flow's store.Code hash: SHA-256 of the device id
}

func (f passwordlessFlow) deviceID() string { return base64.StdEncoding.EncodeToString(f.device) }
func (f passwordlessFlow) preAuthSessionID() string {
	return base64.RawURLEncoding.EncodeToString(f.hash[:])
}

// typedHash is the store.Code hash of a typed code of the flow.
func (f passwordlessFlow) typedHash(userCode string) store.TokenHash {
	m := hmac.New(sha256.New, f.device)
	m.Write([]byte("latchkit/auth passwordless code\x00"))
	m.Write([]byte(userCode))
	return sha256.Sum256([]byte(base64.RawURLEncoding.EncodeToString(m.Sum(nil))))
}

// linkHash is the store.Code hash of a link code.
func linkHash(linkCode string) store.TokenHash {
	return sha256.Sum256([]byte("link\x00" + linkCode))
}

func newPasswordlessFlow() passwordlessFlow {
	device := make([]byte, 32)
	rand.Read(device)
	return passwordlessFlow{device: device, hash: sha256.Sum256(device)}
}

// flowOf reads a flow from a request's deviceId and preAuthSessionId,
// which must agree, or from preAuthSessionId alone (device ""). It
// reports false for ids this server never made.
func flowOf(device, preAuthSessionID string) (passwordlessFlow, bool) {
	h, err := base64.RawURLEncoding.Strict().DecodeString(preAuthSessionID)
	if err != nil || len(h) != len(store.TokenHash{}) {
		return passwordlessFlow{}, false
	}
	f := passwordlessFlow{hash: store.TokenHash(h)}
	if device == "" {
		return f, true
	}
	d, err := base64.StdEncoding.Strict().DecodeString(device)
	if err != nil || len(d) != 32 {
		return passwordlessFlow{}, false
	}
	sum := sha256.Sum256(d)
	if !hmac.Equal(sum[:], h) {
		return passwordlessFlow{}, false
	}
	f.device = d
	return f, true
}

// newUserCode draws six decimal digits.
func newUserCode() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	return fmt.Sprintf("%06d", n.Int64())
}

// Messages of passwordless refusals that the UI shows as they are.
const (
	msgPhoneInvalid      = "Phone number is invalid"
	msgCodeNotGenerated  = "Failed to generate a one time code. Please try again"
	reasonPasswordless   = "Cannot sign in / up due to security reasons. Please try a different login method or contact support. (ERR_CODE_002)"
	passwordlessRestart  = "RESTART_FLOW_ERROR"
	passwordlessWrong    = "INCORRECT_USER_INPUT_CODE_ERROR"
	passwordlessExpired  = "EXPIRED_USER_INPUT_CODE_ERROR"
	passwordlessNotAllow = "SIGN_IN_UP_NOT_ALLOWED"
)

// contactRequest is the body of /signinup/code.
type contactRequest struct {
	Email       *string `json:"email"`
	PhoneNumber *string `json:"phoneNumber"`
	kit.LinkingField
}

// handleCreateCode starts a passwordless flow: it sends a code, a link or
// both to an email address (or a phone number, with a TextSender) and
// tells the browser the flow's ids. The answer is the same whether the
// address has an account or not.
func (a *Auth) handleCreateCode(w http.ResponseWriter, r *http.Request) {
	var req contactRequest
	if !a.readSignInRequest(w, r, &req) {
		return
	}
	contact, msg, err := a.contactOf(req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if msg != "" {
		wire.GeneralError(w, msg)
		return
	}
	if !a.allowSend(w, r, contact) {
		return
	}
	ctx := r.Context()
	now := a.cfg.Now()
	f := newPasswordlessFlow()
	flow := store.Code{
		Hash: f.hash, Kind: store.CodePasswordlessFlow, Email: contact,
		CreatedAt: now, ExpiresAt: now.Add(passwordlessFlowCodes * a.cfg.Passwordless.CodeLifetime),
	}
	if err := a.store.CreateCode(ctx, flow); err != nil {
		a.fail(w, r, fmt.Errorf("auth: starting a passwordless flow: %w", err))
		return
	}
	if !a.sendCode(w, r, f, flow, now) {
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status           string `json:"status"`
		DeviceID         string `json:"deviceId"`
		PreAuthSessionID string `json:"preAuthSessionId"`
		FlowType         string `json:"flowType"`
	}{"OK", f.deviceID(), f.preAuthSessionID(), a.cfg.Passwordless.Flow.wire()})

}

// handleResendCode sends another code for a flow. The codes sent before
// keep working until they expire.
func (a *Auth) handleResendCode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceID         *string `json:"deviceId"`
		PreAuthSessionID *string `json:"preAuthSessionId"`
		kit.LinkingField
	}
	if !a.readSignInRequest(w, r, &req) {
		return
	}
	if req.DeviceID == nil || req.PreAuthSessionID == nil {
		a.fail(w, r, wire.BadRequest("Please provide a deviceId and a preAuthSessionId"))
		return
	}
	ctx := r.Context()
	f, ok := flowOf(*req.DeviceID, *req.PreAuthSessionID)
	if !ok || *req.DeviceID == "" {
		wire.Status(w, passwordlessRestart)
		return
	}
	now := a.cfg.Now()
	flow, err := a.store.Code(ctx, store.CodePasswordlessFlow, f.hash, now)
	if errors.Is(err, store.ErrNotFound) {
		wire.Status(w, passwordlessRestart)
		return
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !a.allowSend(w, r, flow.Email) {
		return
	}
	if a.sendCode(w, r, f, flow, now) {
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

// contactOf reads the email or phone number of a /signinup/code body: the
// normalised address, or the message a GENERAL_ERROR shows, or a 400.
func (a *Auth) contactOf(req contactRequest) (contact, msg string, err error) {
	switch {
	case (req.Email == nil) == (req.PhoneNumber == nil):
		return "", "", wire.BadRequest("Please provide exactly one of email or phoneNumber")
	case req.PhoneNumber != nil && a.cfg.Passwordless.TextSender == nil:
		return "", "", wire.BadRequest("this server signs in by email only: send email, not phoneNumber")
	case req.PhoneNumber != nil:
		phone, ok := normalisePhone(*req.PhoneNumber)
		if !ok {
			return "", msgPhoneInvalid, nil
		}
		return phone, "", nil
	}
	email := address.Normalise(*req.Email)
	return email, wire.CheckEmail(email), nil
}

// normalisePhone returns a phone number in E.164 form: "+", then 8 to 15
// digits, the first not 0, with the spaces, dots, dashes and brackets
// people type between them removed.
func normalisePhone(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 32 || !strings.HasPrefix(s, "+") {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('+')
	for _, c := range s[1:] {
		switch {
		case c >= '0' && c <= '9':
			b.WriteRune(c)
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return "", false
		}
	}
	p := b.String()
	return p, len(p) >= 9 && len(p) <= 16 && p[1] != '0'
}

// allowSend spends a send of the client's allowance and of the address's,
// or answers the request itself and reports false. Every address is
// counted alike, known or not, so the limit tells nothing about accounts.
func (a *Auth) allowSend(w http.ResponseWriter, r *http.Request, contact string) bool {
	ctx := r.Context()
	perClient := limit{kit.LimitKey("passwordless-client", a.limitClient(r)), a.cfg.RateLimits.ClientPasswordlessSends}
	if wait := a.take(ctx, perClient); wait > 0 {
		wire.TooMany(w, wait)
		return false
	}
	perAddress := limit{kit.LimitKey("passwordless-send", contact), a.cfg.RateLimits.PasswordlessSends}
	if wait := a.take(ctx, perAddress); wait > 0 {
		a.emit(ctx, r, Event{Kind: EventSignInThrottled, Method: store.MethodPasswordless})
		wire.GeneralError(w, "Several codes were sent to this address a moment ago. Please use the latest, or try again in "+
			kit.InWords(roundUp(wait))+".")

		return false
	}
	return true
}

// roundUp rounds a wait up to whole seconds, or whole minutes past one.
func roundUp(d time.Duration) time.Duration {
	unit := time.Second
	if d > time.Minute {
		unit = time.Minute
	}
	return (d + unit - 1) / unit * unit
}

// sendCode adds a new code to the flow f (whose record is flow), a code
// to type, a link or both as Config.Passwordless.Flow says, and queues
// its email or text message, or answers the request itself and reports
// false. A code works for CodeLifetime, or what is left of its flow's
// life if that is shorter, and the message says which.
func (a *Auth) sendCode(w http.ResponseWriter, r *http.Request, f passwordlessFlow, flow store.Code, now time.Time) bool {
	ctx := r.Context()
	cfg := a.cfg.Passwordless
	expires := now.Add(cfg.CodeLifetime)
	if flow.ExpiresAt.Before(expires) {
		expires = flow.ExpiresAt
	}
	if expires.Sub(now) < time.Minute {
		wire.Status(w, passwordlessRestart) // too late in the flow for a code worth sending
		return false
	}
	m := TextMessage{ValidFor: kit.InWords(expires.Sub(now))}
	created := func(hash store.TokenHash) error {
		return a.store.CreateCode(ctx, store.Code{
			Hash: hash, Kind: store.CodePasswordless, Flow: f.hash, CreatedAt: now, ExpiresAt: expires,
		})
	}
	var err error
	if cfg.Flow.codes() {
		for range passwordlessCodeTries {
			m.Code = newUserCode()
			// A conflict is a code the flow was sent already: draw again.
			if err = created(f.typedHash(m.Code)); !errors.Is(err, store.ErrConflict) {
				break
			}
		}
	}
	if err == nil && cfg.Flow.links() {
		link, _ := onetime.New()
		err = created(linkHash(link))
		// Both ids are URL-safe base64: nothing to escape.
		m.Link = wire.WithQuery(cfg.LinkURL, "preAuthSessionId="+f.preAuthSessionID()+"&tenantId=public") + "#" + link
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		wire.GeneralError(w, msgCodeNotGenerated)
		return false
	case errors.Is(err, store.ErrNotFound):
		wire.Status(w, passwordlessRestart) // the flow ended meanwhile
		return false
	case err != nil:
		a.fail(w, r, fmt.Errorf("auth: creating a passwordless code: %w", err))
		return false
	}
	a.queueCode(flow.Email, m)
	return true
}

// queueCode sends m to contact off the request path.
func (a *Auth) queueCode(contact string, m TextMessage) {
	a.outbox.enqueue(a, mailJob{"passwordless", func(ctx context.Context) {
		var err error
		if address.IsPhone(contact) {
			m.To = contact
			err = a.outbox.retry(ctx, func(ctx context.Context) error { return a.cfg.Passwordless.TextSender.SendText(ctx, m) })
		} else {
			err = a.mailCode(ctx, contact, m)
		}
		if err != nil {
			a.mailFailed(ctx, "passwordless", "", "sending the code", err)
			return
		}
		a.emit(ctx, nil, Event{Kind: EventPasswordlessCodeSent, Method: store.MethodPasswordless})
	}})
}

func (a *Auth) mailCode(ctx context.Context, email string, m TextMessage) error {
	return a.mail(ctx, a.cfg.Passwordless.Email, email, PasswordlessEmailData{
		Email: email, Code: m.Code, Link: m.Link, ValidFor: m.ValidFor,
	})
}

// handleConsumeCode signs in, or up, with a code typed into the page
// that started the flow (with its deviceId) or with a link's code. A
// wrong or expired code counts against the flow, which ends at the fifth,
// and against the address, across its flows (RateLimits.
// PasswordlessFailures); a link code that does not work ends nothing and
// is not counted, as it is 256 random bits.
func (a *Auth) handleConsumeCode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PreAuthSessionID *string `json:"preAuthSessionId"`
		DeviceID         *string `json:"deviceId"`
		UserInputCode    *string `json:"userInputCode"`
		LinkCode         *string `json:"linkCode"`
		kit.LinkingField
	}
	if !a.readSignInRequest(w, r, &req) {
		return
	}
	byCode := req.UserInputCode != nil || req.DeviceID != nil
	if err := a.checkConsumeBody(byCode, req.PreAuthSessionID, req.DeviceID, req.UserInputCode, req.LinkCode); err != nil {
		a.fail(w, r, err)
		return
	}
	device, code := "", ""
	if byCode {
		device, code = *req.DeviceID, *req.UserInputCode
	} else {
		code = *req.LinkCode
	}
	f, ok := flowOf(device, *req.PreAuthSessionID)
	if !ok || byCode && device == "" {
		wire.Status(w, passwordlessRestart)
		return
	}
	if byCode {
		a.consumeUserCode(w, r, f, strings.TrimSpace(code))
		return
	}
	a.consumeLinkCode(w, r, f, code)
}

// checkConsumeBody refuses a consume request that names no flow, both or
// neither of a link and a typed code, the kind of code this server does
// not send, or an oversized code.
func (a *Auth) checkConsumeBody(byCode bool, pre, device, userCode, link *string) error {
	flow := a.cfg.Passwordless.Flow
	switch {
	case pre == nil:
		return wire.BadRequest("Please provide the preAuthSessionId")
	case byCode == (link != nil) || byCode && (userCode == nil || device == nil):
		return wire.BadRequest("Please provide one of (linkCode) or (deviceId+userInputCode) and not both")
	case byCode && !flow.codes():
		return wire.BadRequest("this server signs in by link only: send the linkCode")
	case !byCode && !flow.links():
		return wire.BadRequest("this server signs in by code only: send the deviceId and userInputCode")
	case byCode && len(*userCode) > wire.MaxParamLen || !byCode && len(*link) > wire.MaxParamLen:
		return wire.BadRequest("a parameter is too long")
	}
	return nil
}

// consumeUserCode checks a typed code against the flow f, counting a
// wrong one against the flow and the address.
func (a *Auth) consumeUserCode(w http.ResponseWriter, r *http.Request, f passwordlessFlow, userCode string) {
	ctx := r.Context()
	now := a.cfg.Now()
	flow, err := a.store.Code(ctx, store.CodePasswordlessFlow, f.hash, now)
	if errors.Is(err, store.ErrNotFound) {
		wire.Status(w, passwordlessRestart)
		return
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// A guess is counted against the address before it is checked, and
	// given back if it was right: so guesses spread over many flows meet
	// one allowance, and none is checked past it.
	failures := limit{kit.LimitKey("passwordless-failures", flow.Email), a.cfg.RateLimits.PasswordlessFailures}
	if wait := a.take(ctx, failures); wait > 0 {
		a.emit(ctx, r, Event{Kind: EventSignInThrottled, Method: store.MethodPasswordless})
		msg := "Too many wrong codes were entered for this address. Please try again in " + kit.InWords(roundUp(wait)) + "."
		if a.cfg.Passwordless.Flow.links() {
			msg = "Too many wrong codes were entered for this address. Please open the link in the latest email, or try again in " +
				kit.InWords(roundUp(wait)) + "."
		}
		wire.GeneralError(w, msg)
		return
	}
	flow, err = a.store.UsePasswordlessCode(ctx, f.hash, f.typedHash(userCode), now, passwordlessAttempts)
	switch {
	case err == nil:
		a.refund(ctx, failures)
		a.passwordlessSignedIn(w, r, flow.Email, false)
	case errors.Is(err, store.ErrWrongCode), errors.Is(err, store.ErrCodeExpired):
		a.emit(ctx, r, Event{Kind: EventSignInFailed, Method: store.MethodPasswordless})
		if flow.Attempts >= passwordlessAttempts {
			wire.Status(w, passwordlessRestart)
			return
		}
		status := passwordlessWrong
		if errors.Is(err, store.ErrCodeExpired) {
			status = passwordlessExpired
		}
		wire.JSON(w, http.StatusOK, struct {
			Status                      string `json:"status"`
			FailedCodeInputAttemptCount int    `json:"failedCodeInputAttemptCount"`
			MaximumCodeInputAttempts    int    `json:"maximumCodeInputAttempts"`
		}{status, flow.Attempts, passwordlessAttempts})

	case errors.Is(err, store.ErrNotFound):
		a.refund(ctx, failures)
		wire.Status(w, passwordlessRestart) // the flow ended meanwhile
	default:
		a.refund(ctx, failures)
		a.fail(w, r, err)
	}
}

// consumeLinkCode signs in with a link's code.
func (a *Auth) consumeLinkCode(w http.ResponseWriter, r *http.Request, f passwordlessFlow, link string) {
	flow, err := a.store.UsePasswordlessCode(r.Context(), f.hash, linkHash(link), a.cfg.Now(), 0)
	switch {
	case err == nil:
		a.passwordlessSignedIn(w, r, flow.Email, true)
	case errors.Is(err, store.ErrWrongCode), errors.Is(err, store.ErrCodeExpired), errors.Is(err, store.ErrNotFound):
		a.emit(r.Context(), r, Event{Kind: EventSignInFailed, Method: store.MethodPasswordless})
		wire.Status(w, passwordlessRestart)
	default:
		a.fail(w, r, err)
	}
}

// passwordlessSignedIn signs in, or up, whoever completed a flow for
// contact: the code reached them, so the address is theirs.
// link tells a link from a typed code.
func (a *Auth) passwordlessSignedIn(w http.ResponseWriter, r *http.Request, contact string, link bool) {
	nl := store.Login{LoginKey: store.PasswordlessKey(contact)}
	if !address.IsPhone(contact) {
		nl.Email, nl.EmailVerified, nl.EmailProven = contact, true, true
	}
	a.signInUp(w, r, kit.SignIn{Login: nl, Factor: factorOf(nl, link),
		NotAllowed: passwordlessNotAllow, Reason: reasonPasswordless, What: "signing in without a password"})
}

// handlePasswordlessExists tells whether an email (or a phone number) has
// a passwordless login: the SDKs' /passwordless/email/exists and
// /passwordless/phonenumber/exists.
func (a *Auth) handlePasswordlessExists(param string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		contact, ok := a.lookupParam(w, r, param)
		if !ok {
			return
		}
		if param == "phoneNumber" {
			contact, ok = normalisePhone(contact)
		} else {
			contact = address.Normalise(contact)
			ok = wire.CheckEmail(contact) == ""
		}
		a.writeExists(w, r, store.PasswordlessKey(contact), ok)
	}
}

// passwordlessRoutes adds the passwordless endpoints to routes.
func (a *Auth) passwordlessRoutes(routes map[string]kit.Route) {
	if a.cfg.Passwordless.Flow == PasswordlessOff {
		return
	}
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	routes["/signinup/code"] = post(a.handleCreateCode)
	routes["/signinup/code/resend"] = post(a.handleResendCode)
	routes["/signinup/code/consume"] = post(a.handleConsumeCode)
	if a.cfg.DisableEmailExists {
		return
	}
	get := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodGet, Handle: h} }
	routes["/passwordless/email/exists"] = get(a.handlePasswordlessExists("email"))
	routes["/passwordless/phonenumber/exists"] = get(a.handlePasswordlessExists("phoneNumber"))
	// The SDKs' older path, which email and password shares: told apart
	// by the rid header.
	routes["/signup/phonenumber/exists"] = get(a.handlePasswordlessExists("phoneNumber"))
	emailpassword := routes["/signup/email/exists"].Handle
	passwordless := a.handlePasswordlessExists("email")
	routes["/signup/email/exists"] = get(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("rid") == "passwordless" || emailpassword == nil {
			passwordless(w, r)
			return
		}
		emailpassword(w, r)
	})
}
