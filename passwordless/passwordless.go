// Package passwordless is the passwordless recipe: a person signs in, or
// up, with a code or a link sent to an email address, or, with a
// TextSender, to a phone number, for the SuperTokens frontend's
// Passwordless recipe. Turn it on with auth.Config's Passwordless field:
//
//	auth.Config{
//		Store:        st,
//		Email:        auth.EmailConfig{Mailer: m},
//		Passwordless: passwordless.Config{Flow: passwordless.CodeAndLink},
//	}
//
// # Routes
//
// Under the Auth's base path ("passwordless" in the SDKs): POST
// /signinup/code starts a flow, POST /signinup/code/resend sends another
// code in it, POST /signinup/code/consume signs in with a typed code or a
// link's code; and unless auth.Config's DisableEmailExists, GET
// /passwordless/email/exists, GET /passwordless/phonenumber/exists, GET
// /signup/phonenumber/exists and, told apart from email and password's by
// the rid header "passwordless", GET /signup/email/exists.
//
// A consume sent with a session and shouldTryLinkingWithSessionUser true
// adds the address to the session's user instead of signing in, and
// starts no session (auth's package doc, # Account self-service);
// the session is checked before the code is spent.
//
// # Flows and codes
//
// Asking for a code starts a flow: the browser gets a random device id
// that only it holds, the store a record of the flow known by the id's
// hash. Each send is six digits from crypto/rand, a link with a random
// 256-bit code, or both; the store keeps a hash of the link code, and of
// the digits' HMAC under the device id, so a copy of the database tells no
// code. The link code is not derived from the digits: whoever started a
// flow could then try the million candidates as links, uncounted. A code
// and its link work for [Config].CodeLifetime (15 minutes), once; a
// resend adds a code to the flow and the earlier ones keep working until
// they expire; a flow lasts four code lifetimes.
//
// A typed code needs the device id, so it works only in the browser that
// asked for it. A wrong or expired one counts against the flow, which
// ends at the fifth (RESTART_FLOW_ERROR: the person asks again), and
// against the address across all its flows (auth.RateLimits'
// PasswordlessFailures), before it is checked: whoever starts flows to
// guess in meets one allowance. A link code is 256 bits and is not
// counted; one that does not work ends nothing. Success ends every flow of
// the address. Sends are limited per address and per client
// (PasswordlessSends, ClientPasswordlessSends), alike for known and
// unknown addresses. A server whose Flow sends only links refuses typed
// codes, and one that sends only codes refuses link codes.
//
// # Accounts
//
// A passwordless login proves its address (store.Login.EmailProven): new
// users are created with it verified, and under auth.Config's
// AccountLinking a sign-in joins the user who owns the address. A
// passwordless sign-in starts a session of its own, through the kernel's
// one sign-in path, unless it is sent with a session and
// shouldTryLinkingWithSessionUser true (# Routes). The factors it
// completes are otp-email, link-email, otp-phone and link-phone.
//
// # Events
//
// passwordless_code_sent when a code or link goes out; sign_in_failed for
// a wrong or expired code, sign_in_throttled past an allowance, sign_up
// and sign_in as for every way to sign in.
package passwordless

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/latchkit/auth/internal/address"
	"github.com/latchkit/auth/internal/kit"
	"github.com/latchkit/auth/internal/onetime"
	"github.com/latchkit/auth/internal/wire"
	"github.com/latchkit/auth/mailer"
	"github.com/latchkit/auth/store"
)

// Flow says what a passwordless sign-in sends: a code to type,
// a link to open, or both.
type Flow string

const (
	// Off, the zero value, serves no passwordless endpoints.
	Off Flow = ""
	// Code sends a six-digit code, typed into the page that
	// asked for it.
	Code Flow = "code"
	// Link sends a link that signs in when opened.
	Link Flow = "link"
	// CodeAndLink sends both; either signs in.
	CodeAndLink Flow = "code-and-link"
)

// DefaultCodeLifetime is how long a passwordless code or link
// works unless Config.CodeLifetime says otherwise.
const DefaultCodeLifetime = 15 * time.Minute

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

// Config configures sign-in with one-time codes and links sent
// by email, and by text message with a TextSender. The zero value means
// off. A passwordless sign-in proves the address (store.Login.EmailProven):
// its users are created with a verified email, and under
// Config.AccountLinking it joins the user who owns the address. Its email
// goes through Config.Email, which needs a Mailer.
type Config struct {
	// Flow is what is sent: Code, Link or
	// CodeAndLink. Default off.
	Flow Flow

	// LinkURL is the page links open, with ?preAuthSessionId=...&
	// tenantId=public and the link code in the fragment added. Default
	// Config.AppURL + "/auth/verify", the page of the SuperTokens UI. The
	// page must consume the link with a POST, as the SDKs do: opening the
	// link spends nothing, so a mail scanner that fetches it does not
	// sign anyone in or use it up.
	LinkURL string

	// Email renders the email. Default DefaultEmail().
	Email *mailer.Template

	// CodeLifetime is how long a code or link works. Default
	// DefaultCodeLifetime, 15 minutes.
	CodeLifetime time.Duration

	// TextSender, if set, lets people sign in with a phone number, which
	// it sends the code or link to. Without one, a phone number is
	// refused (400). The library ships no sender: use your SMS
	// provider's API.
	TextSender TextSender
}

//go:embed templates
var templateFS embed.FS

// defaultEmail is parsed once and never handed out: each caller of
// DefaultEmail, and each Auth, gets its own copy.
var defaultEmail = mailer.Template{
	Subject: texttemplate.Must(texttemplate.New("subject").Parse("{{if .Code}}Your sign-in code{{else}}Your sign-in link{{end}}")),
	Text:    texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/passwordless.txt")),
	HTML:    htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/passwordless.html")),
}

// DefaultEmail returns the passwordless email used when Config.Email is
// nil, as a starting point for one's own.
func DefaultEmail() mailer.Template { return kit.MustClone(defaultEmail) }

// firstFactors are the factors c lets a session start with, as the SDKs
// name them: otp-email and link-email as its Flow sends codes and links,
// and their phone counterparts with a TextSender.
func (c Config) firstFactors() []string {
	var factors []string
	if c.Flow.codes() {
		factors = append(factors, kit.FactorOTPEmail)
	}
	if c.Flow.links() {
		factors = append(factors, kit.FactorLinkEmail)
	}
	if c.TextSender != nil && c.Flow.codes() {
		factors = append(factors, kit.FactorOTPPhone)
	}
	if c.TextSender != nil && c.Flow.links() {
		factors = append(factors, kit.FactorLinkPhone)
	}
	return factors
}

// Limits are the allowances of the recipe, from auth.RateLimits.
type Limits struct {
	Sends, ClientSends, Failures kit.Rate
}

// Recipe is passwordless sign-in as one Auth serves it. Package auth
// makes it with New from its Config; an application does not.
type Recipe struct {
	k      kit.Kernel
	cfg    Config
	setup  kit.Setup
	limits Limits
}

// New is for package auth: the recipe of c, with its defaults, for the
// kernel k.
func New(k kit.Kernel, c Config, setup kit.Setup, limits Limits) (*Recipe, error) {
	c, err := c.withDefaults(setup)
	if err != nil {
		return nil, err
	}
	k.FirstFactors(c.firstFactors()...)
	return &Recipe{k: k, cfg: c, setup: setup, limits: limits}, nil
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
	Code     string // the code to type; "" when Flow is Link
	Link     string // the link to open; "" when Flow is Code
	ValidFor string // how long they work, in words: "15 minutes"
}

// EmailData is what the passwordless email templates can
// show.
type EmailData struct {
	Email    string // the recipient, who signs in
	Code     string // the code to type; "" when Flow is Link
	Link     string // the link to open; "" when Flow is Code
	ValidFor string // how long they work, in words: "15 minutes"
}

// withDefaults is c with its defaults filled in, or why c will not do.
func (c Config) withDefaults(setup kit.Setup) (Config, error) {
	switch c.Flow {
	case Code, Link, CodeAndLink:
	default:
		return c, fmt.Errorf("auth: Config.Passwordless.Flow %q is not one of \"\", %q, %q and %q",
			c.Flow, Code, Link, CodeAndLink)
	}
	if !setup.CanMail {
		return c, errors.New("auth: Config.Passwordless needs Config.Email.Mailer to send its codes")
	}
	if c.LinkURL == "" {
		c.LinkURL = strings.TrimRight(setup.AppURL, "/") + "/auth/verify"
	}
	if u, err := url.Parse(c.LinkURL); err != nil || u.Host == "" || u.Fragment != "" {
		return c, fmt.Errorf("auth: Config.Passwordless.LinkURL %q is not an absolute URL without a fragment", c.LinkURL)
	}
	if c.Email == nil {
		t := DefaultEmail()
		c.Email = &t
	} else if c.Email.Subject == nil || c.Email.Text == nil {
		return c, errors.New("auth: Config.Passwordless.Email needs a Subject and a Text template")
	}
	if c.CodeLifetime == 0 {
		c.CodeLifetime = DefaultCodeLifetime
	}
	if c.CodeLifetime < time.Minute {
		return c, errors.New("auth: Config.Passwordless.CodeLifetime must be at least a minute")
	}
	return c, nil
}

func (f Flow) codes() bool { return f == Code || f == CodeAndLink }
func (f Flow) links() bool { return f == Link || f == CodeAndLink }

// wire is the flowType the SDKs know the flow by.
func (f Flow) wire() string {
	switch f {
	case Code:
		return "USER_INPUT_CODE"
	case Link:
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
func (rc *Recipe) handleCreateCode(w http.ResponseWriter, r *http.Request) {
	var req contactRequest
	if !rc.k.ReadSignInRequest(w, r, &req) {
		return
	}
	contact, msg, err := rc.contactOf(req)
	if err != nil {
		rc.k.Fail(w, r, err)
		return
	}
	if msg != "" {
		wire.GeneralError(w, msg)
		return
	}
	if !rc.allowSend(w, r, contact) {
		return
	}
	ctx := r.Context()
	now := rc.k.Now()
	f := newPasswordlessFlow()
	flow := store.Code{
		Hash: f.hash, Kind: store.CodePasswordlessFlow, Tenant: rc.k.Tenant(ctx).StoreID(), Email: contact,
		CreatedAt: now, ExpiresAt: now.Add(passwordlessFlowCodes * rc.cfg.CodeLifetime),
	}
	if err := rc.k.Store().CreateCode(ctx, flow); err != nil {
		rc.k.Fail(w, r, fmt.Errorf("auth: starting a passwordless flow: %w", err))
		return
	}
	if !rc.sendCode(w, r, f, flow, now) {
		return
	}
	wire.JSON(w, http.StatusOK, struct {
		Status           string `json:"status"`
		DeviceID         string `json:"deviceId"`
		PreAuthSessionID string `json:"preAuthSessionId"`
		FlowType         string `json:"flowType"`
	}{"OK", f.deviceID(), f.preAuthSessionID(), rc.cfg.Flow.wire()})

}

// handleResendCode sends another code for a flow. The codes sent before
// keep working until they expire.
func (rc *Recipe) handleResendCode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceID         *string `json:"deviceId"`
		PreAuthSessionID *string `json:"preAuthSessionId"`
		kit.LinkingField
	}
	if !rc.k.ReadSignInRequest(w, r, &req) {
		return
	}
	if req.DeviceID == nil || req.PreAuthSessionID == nil {
		rc.k.Fail(w, r, wire.BadRequest("Please provide a deviceId and a preAuthSessionId"))
		return
	}
	f, ok := flowOf(*req.DeviceID, *req.PreAuthSessionID)
	if !ok || *req.DeviceID == "" {
		wire.Status(w, passwordlessRestart)
		return
	}
	now := rc.k.Now()
	flow, ok := rc.flowRecord(w, r, f, now)
	if !ok {
		return
	}
	if !rc.allowSend(w, r, flow.Email) {
		return
	}
	if rc.sendCode(w, r, f, flow, now) {
		wire.JSON(w, http.StatusOK, wire.OK)
	}
}

// contactOf reads the email or phone number of a /signinup/code body: the
// normalised address, or the message a GENERAL_ERROR shows, or a 400.
func (rc *Recipe) contactOf(req contactRequest) (contact, msg string, err error) {
	switch {
	case (req.Email == nil) == (req.PhoneNumber == nil):
		return "", "", wire.BadRequest("Please provide exactly one of email or phoneNumber")
	case req.PhoneNumber != nil && rc.cfg.TextSender == nil:
		return "", "", wire.BadRequest("this server signs in by email only: send email, not phoneNumber")
	case req.PhoneNumber != nil:
		phone, ok := address.NormalisePhone(*req.PhoneNumber)
		if !ok {
			return "", msgPhoneInvalid, nil
		}
		return phone, "", nil
	}
	email := address.Normalise(*req.Email)
	return email, wire.CheckEmail(email), nil
}

// allowSend spends a send of the client's allowance and of the address's,
// or answers the request itself and reports false. Every address is
// counted alike, known or not, so the limit tells nothing about accounts.
func (rc *Recipe) allowSend(w http.ResponseWriter, r *http.Request, contact string) bool {
	ctx := r.Context()
	perClient := kit.Limit{Key: kit.LimitKey("passwordless-client", rc.k.Client(r)), Rate: rc.limits.ClientSends}
	if wait := rc.k.Take(ctx, perClient); wait > 0 {
		wire.TooMany(w, wait)
		return false
	}
	perAddress := kit.Limit{Key: kit.LimitKey("passwordless-send", contact), Rate: rc.limits.Sends}
	if wait := rc.k.Take(ctx, perAddress); wait > 0 {
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInThrottled, Method: store.MethodPasswordless})
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
func (rc *Recipe) sendCode(w http.ResponseWriter, r *http.Request, f passwordlessFlow, flow store.Code, now time.Time) bool {
	ctx := r.Context()
	cfg := rc.cfg
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
		return rc.k.Store().CreateCode(ctx, store.Code{
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
		m.Link = wire.WithQuery(cfg.LinkURL, "preAuthSessionId="+f.preAuthSessionID()+"&tenantId="+store.TenantID(flow.Tenant)) + "#" + link
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		wire.GeneralError(w, msgCodeNotGenerated)
		return false
	case errors.Is(err, store.ErrNotFound):
		wire.Status(w, passwordlessRestart) // the flow ended meanwhile
		return false
	case err != nil:
		rc.k.Fail(w, r, fmt.Errorf("auth: creating a passwordless code: %w", err))
		return false
	}
	rc.queueCode(ctx, flow.Email, m)
	return true
}

// queueCode sends m to contact off the request path.
func (rc *Recipe) queueCode(ctx context.Context, contact string, m TextMessage) {
	rc.k.Enqueue(ctx, "passwordless", func(ctx context.Context) {
		var err error
		if address.IsPhone(contact) {
			m.To = contact
			err = rc.k.Retry(ctx, func(ctx context.Context) error { return rc.cfg.TextSender.SendText(ctx, m) })
		} else {
			err = rc.mailCode(ctx, contact, m)
		}
		if err != nil {
			rc.k.MailFailed(ctx, "passwordless", "", "sending the code", err)
			return
		}
		rc.k.Emit(ctx, nil, kit.Event{Kind: kit.EventPasswordlessCodeSent, Method: store.MethodPasswordless})
	})
}

func (rc *Recipe) mailCode(ctx context.Context, email string, m TextMessage) error {
	return rc.k.Mail(ctx, rc.cfg.Email, email, EmailData{
		Email: email, Code: m.Code, Link: m.Link, ValidFor: m.ValidFor,
	})
}

// handleConsumeCode signs in, or up, with a code typed into the page
// that started the flow (with its deviceId) or with a link's code. A
// wrong or expired code counts against the flow, which ends at the fifth,
// and against the address, across its flows (RateLimits.
// PasswordlessFailures); a link code that does not work ends nothing and
// is not counted, as it is 256 random bits.
func (rc *Recipe) handleConsumeCode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		PreAuthSessionID *string `json:"preAuthSessionId"`
		DeviceID         *string `json:"deviceId"`
		UserInputCode    *string `json:"userInputCode"`
		LinkCode         *string `json:"linkCode"`
		kit.LinkingField
	}
	if !rc.k.ReadSignInRequest(w, r, &req) {
		return
	}
	byCode := req.UserInputCode != nil || req.DeviceID != nil
	if err := rc.checkConsumeBody(byCode, req.PreAuthSessionID, req.DeviceID, req.UserInputCode, req.LinkCode); err != nil {
		rc.k.Fail(w, r, err)
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
	// Adding the address to the session's user: the session is checked
	// before the code is spent.
	linking := req.LinkRequested()
	if linking && !rc.mayLink(w, r) {
		return
	}
	if byCode {
		rc.consumeUserCode(w, r, f, strings.TrimSpace(code), linking)
		return
	}
	rc.consumeLinkCode(w, r, f, code, linking)
}

// mayLink reports whether the request's session may have a login added
// (it has met its MFA requirement and signed in recently), or answers
// the request itself.
func (rc *Recipe) mayLink(w http.ResponseWriter, r *http.Request) bool {
	s, ok := rc.k.AccountSession(w, r)
	return ok && rc.k.SignedInRecently(w, r, s)
}

// checkConsumeBody refuses a consume request that names no flow, both or
// neither of a link and a typed code, the kind of code this server does
// not send, or an oversized code.
func (rc *Recipe) checkConsumeBody(byCode bool, pre, device, userCode, link *string) error {
	flow := rc.cfg.Flow
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

// flowRecord reads the record of the flow f, or answers the request
// itself: RESTART_FLOW_ERROR for a flow that has ended.
func (rc *Recipe) flowRecord(w http.ResponseWriter, r *http.Request, f passwordlessFlow, now time.Time) (store.Code, bool) {
	flow, err := rc.k.Store().Code(r.Context(), store.CodePasswordlessFlow, f.hash, now)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !rc.ofTenant(r, flow)) {
		wire.Status(w, passwordlessRestart)
		return store.Code{}, false
	}
	if err != nil {
		rc.k.Fail(w, r, err)
		return store.Code{}, false
	}
	return flow, true
}

// consumeUserCode checks a typed code against the flow f, counting a
// wrong one against the flow and the address.
func (rc *Recipe) consumeUserCode(w http.ResponseWriter, r *http.Request, f passwordlessFlow, userCode string, linking bool) {
	ctx := r.Context()
	now := rc.k.Now()
	flow, ok := rc.flowRecord(w, r, f, now)
	if !ok {
		return
	}
	// A guess is counted against the address before it is checked, and
	// given back if it was right: so guesses spread over many flows meet
	// one allowance, and none is checked past it.
	failures := kit.Limit{Key: kit.LimitKey("passwordless-failures", flow.Email), Rate: rc.limits.Failures}
	if wait := rc.k.Take(ctx, failures); wait > 0 {
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInThrottled, Method: store.MethodPasswordless})
		msg := "Too many wrong codes were entered for this address. Please try again in " + kit.InWords(roundUp(wait)) + "."
		if rc.cfg.Flow.links() {
			msg = "Too many wrong codes were entered for this address. Please open the link in the latest email, or try again in " +
				kit.InWords(roundUp(wait)) + "."
		}
		wire.GeneralError(w, msg)
		return
	}
	flow, err := rc.k.Store().UsePasswordlessCode(ctx, f.hash, f.typedHash(userCode), now, passwordlessAttempts)
	switch {
	case err == nil && !rc.ofTenant(r, flow):
		wire.Status(w, passwordlessRestart) // moved to another tenant's meanwhile: never
	case err == nil:
		rc.k.Refund(ctx, failures)
		rc.passwordlessSignedIn(w, r, flow.Email, false, linking)
	case errors.Is(err, store.ErrWrongCode), errors.Is(err, store.ErrCodeExpired):
		rc.k.Emit(ctx, r, kit.Event{Kind: kit.EventSignInFailed, Method: store.MethodPasswordless})
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
		rc.k.Refund(ctx, failures)
		wire.Status(w, passwordlessRestart) // the flow ended meanwhile
	default:
		rc.k.Refund(ctx, failures)
		rc.k.Fail(w, r, err)
	}
}

// consumeLinkCode signs in with a link's code.
func (rc *Recipe) consumeLinkCode(w http.ResponseWriter, r *http.Request, f passwordlessFlow, link string, linking bool) {
	flow, err := rc.k.Store().UsePasswordlessCode(r.Context(), f.hash, linkHash(link), rc.k.Now(), 0)
	switch {
	case err == nil && !rc.ofTenant(r, flow):
		// A link of another tenant's: spent, since whoever posts it
		// holds it, and opening nothing here.
		rc.k.Emit(r.Context(), r, kit.Event{Kind: kit.EventSignInFailed, Method: store.MethodPasswordless})
		wire.Status(w, passwordlessRestart)
	case err == nil:
		rc.passwordlessSignedIn(w, r, flow.Email, true, linking)
	case errors.Is(err, store.ErrWrongCode), errors.Is(err, store.ErrCodeExpired), errors.Is(err, store.ErrNotFound):
		rc.k.Emit(r.Context(), r, kit.Event{Kind: kit.EventSignInFailed, Method: store.MethodPasswordless})
		wire.Status(w, passwordlessRestart)
	default:
		rc.k.Fail(w, r, err)
	}
}

// ofTenant reports whether flow was started in the request's tenant: a
// flow, its codes and its links open nothing in another.
func (rc *Recipe) ofTenant(r *http.Request, flow store.Code) bool {
	return flow.Tenant == rc.k.Tenant(r.Context()).StoreID()
}

// passwordlessSignedIn signs in, or up, whoever completed a flow for
// contact: the code reached them, so the address is theirs.
// link tells a link from a typed code.
//
// With linkToSession (shouldTryLinkingWithSessionUser true) the address
// joins the session's user instead.
func (rc *Recipe) passwordlessSignedIn(w http.ResponseWriter, r *http.Request, contact string, link, linkToSession bool) {
	nl := store.Login{LoginKey: store.PasswordlessKey(contact)}
	if !address.IsPhone(contact) {
		nl.Email, nl.EmailVerified, nl.EmailProven = contact, true, true
	}
	rc.k.SignIn(w, r, kit.SignIn{Login: nl, Factor: kit.FactorOf(nl, link), LinkToSession: linkToSession,
		NotAllowed: passwordlessNotAllow, Reason: reasonPasswordless, What: "signing in without a password"})
}

// handlePasswordlessExists tells whether an email (or a phone number) has
// a passwordless login: the SDKs' /passwordless/email/exists and
// /passwordless/phonenumber/exists.
func (rc *Recipe) handlePasswordlessExists(param string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		contact, ok := rc.k.LookupParam(w, r, param)
		if !ok {
			return
		}
		if param == "phoneNumber" {
			contact, ok = address.NormalisePhone(contact)
		} else {
			contact = address.Normalise(contact)
			ok = wire.CheckEmail(contact) == ""
		}
		rc.k.WriteExists(w, r, rc.k.Tenant(r.Context()).Key(store.PasswordlessKey(contact)), ok)
	}
}

// Routes are the recipe's endpoints, by their path under the base path.
// The SDKs' older /signup/email/exists, which email and password shares,
// is among them: the kernel tells the two apart by the rid header.
func (rc *Recipe) Routes() map[string]kit.Route {
	post := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodPost, Handle: h} }
	routes := map[string]kit.Route{
		"/signinup/code":         post(rc.handleCreateCode),
		"/signinup/code/resend":  post(rc.handleResendCode),
		"/signinup/code/consume": post(rc.handleConsumeCode),
	}
	if rc.setup.DisableEmailExists {
		return routes
	}
	get := func(h http.HandlerFunc) kit.Route { return kit.Route{Method: http.MethodGet, Handle: h} }
	routes["/passwordless/email/exists"] = get(rc.handlePasswordlessExists("email"))
	routes["/passwordless/phonenumber/exists"] = get(rc.handlePasswordlessExists("phoneNumber"))
	routes["/signup/phonenumber/exists"] = get(rc.handlePasswordlessExists("phoneNumber"))
	routes["/signup/email/exists"] = get(rc.handlePasswordlessExists("email"))
	return routes
}
