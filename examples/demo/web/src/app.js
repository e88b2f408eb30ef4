// The demo's front end: sign up, sign in, "signed in as", sign out and
// password reset, with supertokens-web-js against the Go auth library;
// and sign-in with the third-party providers the server lists
// (GET /auth/loginmethods), finished on the callback page the provider
// sends the browser back to, /auth/callback/<thirdPartyId>: this page too.
// With email verification on (GET /api/config says), the signed-in view
// shows the session's st-ev claim and asks for a link; the link opens
// /auth/verify-email, this page too. In required mode /api/me refuses an
// unverified session (403 "invalid claim"), and the page asks
// /api/verification, which lets it through, who is signed in. Adding a
// passkey or an authenticator app waits for a verified address: the page
// mails the link and says so.
// With passwordless sign-in on (the login methods' first factors name
// otp-email or link-email), the signed-out view also emails a code to
// type or a link to open; the link opens /auth/verify, this page too,
// which signs in at once in the browser that asked for the link and after
// a click on Continue in any other.
// With passkeys on (the first factors name webauthn), the signed-out view
// signs up with a new passkey for an email, signs in with one, and emails
// a recovery link; the link opens /auth/webauthn/recover, this page too,
// where a click creates a new passkey for the account. Passkeys need the
// page on a domain name, such as localhost: browsers refuse WebAuthn on
// IP addresses.
// With MFA on (GET /api/config's mfa lists the second factors), /api/me
// answers 403 st-mfa after sign-in until the session completes one: the
// page asks PUT /auth/mfa/info what is set up, and either sets up an
// authenticator app (a QR code of the otpauth URI and the key as text,
// then a code) or asks for its code, a recovery code, or a passkey (with
// -mfa totp,webauthn). After the first set-up it shows ten recovery codes
// once; the signed-in view counts them, makes a new set, and lists the
// authenticator apps.
//
// The account page, /account (this page too, linked as "Account" from the
// signed-in view), shows the user's login methods, where they are signed
// in, passkeys and second factors, from GET /api/account (the demo's own
// handlers, account.go, on the library's Go API); it ends sessions and
// unlinks login methods with the demo's POST routes, and manages
// passkeys, authenticator apps, recovery codes and verification emails
// with the SDK and the library's routes. "Link <provider>" signs in with
// the provider: account linking joins it when it vouches for the
// account's verified email. The list of sessions is live: a WebSocket to
// GET /api/live (live.go) sends it again whenever it changes, and closes
// when this session ends, when the page shows the signed-out view.
// With -dev (GET /api/config's dev), a banner says so, with a link to
// the outbox of the emails sent.
//
// ?mode=header uses header tokens instead of cookies, and the reset page
// and callback pages keep the mode the page was used in (pageMode).
// <meta name="api-domain" content="..."> (or <html data-api-domain="...">)
// points the page at an API on another origin. Not a query parameter: a
// crafted link must not send what the user types to another server.
import SuperTokens from "supertokens-web-js";
import Session from "supertokens-web-js/recipe/session";
import EmailPassword from "supertokens-web-js/recipe/emailpassword";
import ThirdParty from "supertokens-web-js/recipe/thirdparty";
import Multitenancy from "supertokens-web-js/recipe/multitenancy";
import EmailVerification from "supertokens-web-js/recipe/emailverification";
import Passwordless from "supertokens-web-js/recipe/passwordless";
import Webauthn from "supertokens-web-js/recipe/webauthn";
import MultiFactorAuth from "supertokens-web-js/recipe/multifactorauth";
import Totp from "supertokens-web-js/recipe/totp";
import qrcode from "qrcode-generator";

const params = new URLSearchParams(window.location.search);
const $ = (id) => document.getElementById(id);

function apiDomain() {
  const meta = document.querySelector('meta[name="api-domain"]');
  const candidates = [meta && meta.content, document.documentElement.dataset.apiDomain];
  for (const c of candidates) {
    if (!c) continue;
    try {
      const u = new URL(c);
      if (u.protocol === "http:" || u.protocol === "https:") return u.origin;
    } catch (_) {
      // not a URL: ignore it
    }
  }
  return window.location.origin;
}

// The reset page is this page too, opened from the link in the email.
const onResetPage = window.location.pathname === "/auth/reset-password";

// So is the page verification links open.
const onVerifyPage = window.location.pathname === "/auth/verify-email";

// And the page passwordless sign-in links open.
const onLinkPage = window.location.pathname === "/auth/verify";

// And the page passkey recovery links open.
const onRecoveryPage = window.location.pathname === "/auth/webauthn/recover";

// And the pages of the links that change the account's email, and undo
// a change.
const onEmailChangePage = window.location.pathname === "/auth/change-email";
const onEmailUndoPage = window.location.pathname === "/auth/undo-email-change";

// And the page invitations to a tenant open (-tenants).
const onInvitationPage = window.location.pathname === "/auth/invitation";

// And the account page.
const onAccountPage = window.location.pathname === "/account";

// And the admin page (with -admin): operators.go serves its API.
const onAdminPage = window.location.pathname === "/admin";

// The callback page is this page too, where a provider sends the browser
// back with the code: /auth/callback/<thirdPartyId>.
const CALLBACK_PATH = "/auth/callback/";
const onCallbackPage = window.location.pathname.startsWith(CALLBACK_PATH);

// pageMode is the token transfer mode: ?mode=header or ?mode=cookie if the
// URL says; else cookie on the sign-in page, and on the reset page the mode
// the sign-in page was last used in. The emailed link cannot carry ?mode
// (its format is the SDKs'), nor can the provider's way back, so the
// sign-in page remembers its mode in this browser; the reset and callback
// pages only read it.
const MODE_KEY = "latchkit-auth-demo.mode";
const isMode = (m) => m === "cookie" || m === "header";

function pageMode() {
  const asked = params.get("mode");
  if (isMode(asked)) return asked;
  if (onResetPage || onVerifyPage || onLinkPage || onRecoveryPage || onCallbackPage || onEmailChangePage || onEmailUndoPage) {
    try {
      const last = window.localStorage.getItem(MODE_KEY);
      if (isMode(last)) return last;
    } catch (_) {
      // storage disabled: the default
    }
  }
  return "cookie";
}

function rememberMode() {
  if (onResetPage || onVerifyPage || onLinkPage || onRecoveryPage || onCallbackPage || onEmailChangePage || onEmailUndoPage) return;
  try {
    window.localStorage.setItem(MODE_KEY, mode);
  } catch (_) {
    // storage disabled: reset and callback pages open in cookie mode
  }
}

const api = apiDomain();
const mode = pageMode();
rememberMode();

// lastEnded is the reason (Auth-Reason) the last refused refresh gave:
// the SDK then forgets the tokens, and the request it retries answers
// no_token, which says nothing of why.
let lastEnded = "";

SuperTokens.init({
  appInfo: { appName: "auth demo", apiDomain: api, apiBasePath: "/auth" },
  recipeList: [
    Session.init({
      tokenTransferMethod: mode,
      postAPIHook: async ({ action, fetchResponse }) => {
        if (action !== "REFRESH_SESSION") return;
        lastEnded = fetchResponse.status === 401 ? fetchResponse.headers.get("Auth-Reason") || "" : "";
      },
    }),
    EmailPassword.init(),
    ThirdParty.init(),
    Multitenancy.init(),
    EmailVerification.init(),
    Passwordless.init(),
    Webauthn.init(),
    MultiFactorAuth.init(),
    Totp.init(),
  ],
});

// features is GET /api/config: { emailVerification: "off" | "optional" |
// "required", accountLinking, passwordless: "code" | "link" |
// "code-and-link", absent when off, passkeys: true, absent when off, mfa:
// the second factors ["totp"] or ["totp", "webauthn"], absent when off,
// account: true where the server has the account page, dev: true with -dev }.
// Until it is read, or if it cannot be, verification is taken to be off.
let features = { emailVerification: "off", accountLinking: false };
const verifying = () => features.emailVerification !== "off";
const mfaOn = () => Array.isArray(features.mfa) && features.mfa.length > 0;

async function loadFeatures() {
  const res = await fetch(api + "/api/config", { credentials: "omit" });
  if (!res.ok) throw new Error("GET /api/config answered " + res.status);
  features = await res.json();
  const said = [];
  if (verifying()) said.push("Email verification: " + features.emailVerification);
  if (features.accountLinking) said.push("Account linking: on");
  if (features.passwordless) said.push("Passwordless: " + features.passwordless.replaceAll("-", " "));
  if (features.passkeys) said.push("Passkeys: on");
  if (mfaOn()) said.push("Two-step sign-in: " + features.mfa.join(" or "));
  $("features").textContent = said.join(" · ");
  $("features").hidden = said.length === 0;
  $("dev-banner").hidden = features.dev !== true;
  $("account-link").hidden = features.account !== true;
}

// emailVerifiedClaim is the session's st-ev claim as the SDK reads it from
// the front token: true, false, or undefined without one.
function emailVerifiedClaim() {
  return Session.getClaimValue({ claim: EmailVerification.EmailVerificationClaim });
}

// For scripts and the browser tests: what the SDK in this page says.
window.authDemo = { emailVerifiedClaim };

// Links back to the sign-in page keep the mode, remembered or not.
function homeURL() {
  return mode === "header" ? "/?mode=header" : "/";
}

// And so do links to the account page.
function accountURL() {
  return mode === "header" ? "/account?mode=header" : "/account";
}

function adminURL() {
  return mode === "header" ? "/admin?mode=header" : "/admin";
}

function say(text) {
  $("status").textContent = text;
}

function show(id) {
  for (const s of ["loading", "signed-in", "signed-out", "reset", "verify-email", "pwl-link", "pk-recovery", "mfa", "account", "email-change", "admin", "invitation"])
    $(s).hidden = s !== id;
}

// fieldErrors shows the server's FIELD_ERROR messages beside their inputs;
// ids maps a form field id to the input's element id.
function fieldErrors(formFields, ids) {
  for (const f of formFields || []) {
    const el = $((ids[f.id] || f.id) + "-error");
    if (el) {
      el.textContent = f.error;
      $(ids[f.id] || f.id).setAttribute("aria-invalid", "true");
    }
  }
}

function clearErrors(form) {
  for (const el of form.querySelectorAll(".error")) el.textContent = "";
  for (const el of form.querySelectorAll("input")) el.removeAttribute("aria-invalid");
}

function failure(err) {
  if (err && err.isSuperTokensGeneralError === true) return err.message;
  // The SDK throws the response of a request it did not expect to fail.
  if (err instanceof Response) return "Something went wrong: the server answered " + err.status + ".";
  return "Something went wrong: " + ((err && err.message) || err) + ".";
}

// busy disables a form's buttons while a request runs; an error, such as
// a GENERAL_ERROR's message, goes to tell (default: the status line).
async function busy(form, fn, tell = say) {
  const buttons = form.querySelectorAll("button");
  buttons.forEach((b) => (b.disabled = true));
  try {
    await fn();
  } catch (err) {
    tell(failure(err));
  } finally {
    buttons.forEach((b) => (b.disabled = false));
  }
}

// refusedClaim is the id of the claim a 403 "invalid claim" names: st-ev
// (required mode, and an unverified email) or st-mfa (a second factor to
// complete); undefined for any other answer.
async function refusedClaim(res) {
  if (res.status !== 403) return undefined;
  try {
    const body = await res.clone().json();
    return (body.claimValidationErrors || [])[0]?.id;
  } catch (_) {
    return undefined;
  }
}

// endedBecause explains a 401 by the reason the server gives in its
// Auth-Reason header (the library's README lists them). The routine ones,
// such as no_token on a first visit, need no words.
const endedBecause = {
  signed_out: "You signed out in another tab or on another device.",
  revoked: "Your session was ended by the application.",
  password_reset: "Your password was changed, which signed you out everywhere. Sign in with the new one.",
  token_theft: "We signed you out to be safe: your session was used from two places at once.",
  token_theft_previous: "We signed you out to be safe: your session was used from two places at once.",
  token_theft_after_window: "We signed you out to be safe: your session was used from two places at once.",
  token_theft_stale: "We signed you out to be safe: your session was used from two places at once.",
  session_expired: "Your session expired. Please sign in again.",
  banned: "This account is suspended. Please contact support.",
};

// showMe shows who is signed in, or, while the session has a second
// factor to complete, the MFA step. mfaDone is what a completed step
// brought: { codes }, new recovery codes to show once.
async function showMe(mfaDone = {}) {
  if (onAccountPage) {
    await showAccount(mfaDone);
    return;
  }
  if (onAdminPage) {
    await showAdmin();
    return;
  }
  // Plain fetch: the SDK's interceptor adds the session (and refreshes it).
  let res = await fetch(api + "/api/me", { credentials: "include" });
  let claim = await refusedClaim(res);
  if (claim === EmailVerification.EmailVerificationClaim.id) {
    // Required mode, and the email is not verified: /api/verification
    // still says who is signed in (once MFA is done).
    res = await fetch(api + "/api/verification", { credentials: "include" });
    claim = await refusedClaim(res);
  }
  if (claim === MFA_CLAIM) {
    await showMFA(mfaDone.resynced);
    return;
  }
  if (res.status === 401) {
    signedOut(res);
    return;
  }
  if (!res.ok) throw new Error("GET " + new URL(res.url).pathname + " answered " + res.status);
  const me = await res.json();
  $("me-email").textContent = me.email;
  $("admin-link").hidden = !(me.roles || []).includes("admin");
  showActing(me);
  show("signed-in");
  await showVerification();
  await showMFAManage(mfaDone.codes);
}

// signedOut shows the signed-out view after a 401, with why the session
// ended.
function signedOut(res) {
  show("signed-out");
  let reason = res.headers.get("Auth-Reason");
  // A refresh refused just before: its reason is the session's.
  if (reason === "no_token") reason = lastEnded;
  const why = endedBecause[reason];
  if (why) say(why);
}

// ---- email verification ----

// showVerification shows what the session's claim says of the email: the
// "Verify your email" notice, or that it is verified. It asks the server
// (GET /auth/user/email/verify, which rewrites the claim) when told to, or
// when the SDK's validator would: no claim, or a false one over 10 seconds
// old. Not through Session.validateClaims: its lock, shared by the tabs,
// is left behind by a page unloaded while holding it, and the next page
// load waits seconds for it to lapse.
const CLAIM = EmailVerification.EmailVerificationClaim;
const REFETCH_FALSE_AFTER_MS = 10_000;

async function showVerification({ refetch = false } = {}) {
  const box = $("verification");
  if (!verifying()) {
    box.hidden = true;
    return;
  }
  const payload = await Session.getAccessTokenPayloadSecurely();
  let verified = CLAIM.getValueFromPayload(payload);
  const stale = verified === false && Date.now() - (CLAIM.getLastFetchedTime(payload) ?? 0) > REFETCH_FALSE_AFTER_MS;
  if (refetch || verified === undefined || stale) {
    await EmailVerification.isEmailVerified();
    verified = await emailVerifiedClaim();
  }
  box.hidden = false;
  box.dataset.verified = String(verified === true);
  $("verify-notice").hidden = verified === true;
  $("verified-notice").hidden = verified !== true;
}

// recheck reads the state from the server: after a link opened in another
// tab or browser. In required mode a change lets /api/me through, so the
// page asks it again. One at a time: a second call while one runs gets the
// first one's answer.
let rechecking = null;
function recheck() {
  rechecking ??= (async () => {
    try {
      const was = $("verification").dataset.verified;
      await showVerification({ refetch: true });
      const now = $("verification").dataset.verified;
      if (now === "true" && was !== "true") {
        say("Your email is verified.");
        if (features.emailVerification === "required") await showMe();
      } else if (now !== "true") {
        say("Your email is not verified yet: open the link in the email.");
      }
    } finally {
      rechecking = null;
    }
  })();
  return rechecking;
}

// A link opened in another tab of this browser changed the session there,
// and the SDK here sees it in the shared front token; one opened elsewhere
// is seen once the server is asked. Either way: look again when the user
// comes back to this tab.
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState !== "visible" || $("signed-in").hidden || $("verification").hidden) return;
  if ($("verification").dataset.verified === "true") return;
  recheck().catch((err) => console.warn("email verification:", err));
});

// verifiedFirst runs send, as freshly does (a fetch, or a call that throws
// the answer), for adding a passkey or an authenticator app. With
// verification on, the library answers those 403 st-ev until the user's
// addresses are verified, so that whoever signs up with someone else's
// address cannot keep a way in past the owner's password reset. On that
// answer it mails a verification link and throws, as the SDK throws a
// GENERAL_ERROR, the words that say so: each busy wrapper shows them in
// its place. The error has unverified: true.
async function verifiedFirst(send) {
  try {
    const res = await send();
    if (!(res instanceof Response) || (await refusedClaim(res)) !== CLAIM.id) return res;
  } catch (err) {
    if (!(err instanceof Response) || (await refusedClaim(err)) !== CLAIM.id) throw err;
  }
  let message;
  try {
    const res = await EmailVerification.sendVerificationEmail();
    message =
      res.status === "OK"
        ? `Verify your email address first: a link is on its way to ${sessionAddress() || "your email address"}.`
        : // This login's address is verified: another password or
          // passkey login of the account's is not.
          "Verify the email address of each password and passkey sign-in of this account first: sign in with it, and ask for a link.";
  } catch (err) {
    // A link was sent within the minute.
    if (!err || err.isSuperTokensGeneralError !== true) throw err;
    message = "Verify your email address first. " + err.message;
  }
  throw { isSuperTokensGeneralError: true, unverified: true, message };
}

// sessionAddress is the address of the login this session signed in
// with, as the page knows it: "" if it does not.
function sessionAddress() {
  const current = account && account.logins.find((l) => l.current);
  return (current && current.email) || mfa.email || $("me-email").textContent;
}

// verifyFromLink runs on the verification page: it posts the token of the
// link (the SDK reads token and tenantId from the URL).
async function verifyFromLink() {
  say("Verifying your email…");
  const res = await EmailVerification.verifyEmail();
  if (res.status === "OK") {
    $("verify-email-done").hidden = false;
    say("Your email is verified.");
  } else {
    say("This verification link has expired or is invalid. Sign in and ask for a new one.");
  }
  $("verify-email-confirm").hidden = true;
}

async function startVerifyPage() {
  show("verify-email");
  if (!verifying()) {
    say("Email verification is off on this server.");
    return;
  }
  if (!params.get("token")) {
    say("This verification link has no token. Sign in and ask for a new one.");
    return;
  }
  // With a session, verify at once: this is the user's browser. Without
  // one, wait for a click, so that a mail scanner that opens links does
  // not use the token up.
  if (await Session.doesSessionExist()) {
    await verifyFromLink();
  } else {
    $("verify-email-confirm").hidden = false;
  }
}

// ---- invitations ----

// startInvitationPage shows an invitation to join a tenant: a signed-in
// user accepts it with a click (a mail scanner that opens the link takes
// nothing); a signed-out one is sent to sign in to the tenant first.
async function startInvitationPage() {
  show("invitation");
  const token = params.get("token");
  const tenant = params.get("tenantId");
  if (!token || !tenant) {
    say("This invitation link is incomplete. Ask for a new one.");
    return;
  }
  $("invitation-tenant").textContent = tenant;
  if (await Session.doesSessionExist()) {
    $("invitation-accept").hidden = false;
    return;
  }
  const signIn = $("invitation-signin");
  // Back here once signed in: the sign-in page of the tenant, then this
  // link again.
  signIn.href = "/?tenantId=" + encodeURIComponent(tenant);
  $("invitation-signed-out").hidden = false;
}

// acceptInvitation posts the link's token with the page's session.
async function acceptInvitation() {
  const tenant = params.get("tenantId");
  const res = await mfaAPI("POST", "/" + encodeURIComponent(tenant) + "/tenant/invitation/accept", { token: params.get("token") });
  $("invitation-accept").hidden = true;
  switch (res.status) {
    case "OK":
      $("invitation-done").hidden = false;
      break;
    case "INVITATION_EMAIL_MISMATCH_ERROR":
      say("This invitation is for another address: sign in with the address it was sent to.");
      break;
    default:
      say("This invitation has expired, was used already or was withdrawn. Ask for a new one.");
  }
}

// ---- third-party sign-in ----

// The provider's name is kept for the callback page, which says "Signed in
// with <name>"; the SDK keeps only the id.
const PROVIDER_KEY = "latchkit-auth-demo.provider";

// loginMethods is GET /auth/loginmethods, asked once: the providers and
// the first factors, passwordless ones included.
let loginMethods;
function loadLoginMethods() {
  // The tenant of the page's ?tenantId=, which the SDK's other calls
  // read themselves.
  loginMethods ??= Promise.resolve(Multitenancy.getTenantId()).then((tenantId) => Multitenancy.getLoginMethods({ tenantId }));
  return loginMethods;
}

// showProviders adds a "Sign in with <name>" button per provider the
// server lists; none, and the page is as without third-party sign-in.
async function showProviders() {
  const res = await loadLoginMethods();
  const box = $("providers");
  box.replaceChildren();
  for (const p of res.thirdParty.providers || []) {
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.thirdPartyId = p.id;
    b.textContent = "Sign in with " + (p.name || p.id);
    b.addEventListener("click", () => signInWith(p.id, p.name || p.id));
    box.append(b);
  }
  box.hidden = box.childElementCount === 0;
  // The -dev banner speaks of the development provider only if it is on.
  $("dev-provider-note").hidden = !(res.thirdParty.providers || []).some((p) => p.id === "dev");
}

// signInWith sends the browser to provider id; with link, to add it to
// the signed-in user (shouldTryLinkingWithSessionUser), which the SDK
// keeps for the callback page's sign-in.
function signInWith(id, name, link = false) {
  say("");
  // The callback page opens in this page's mode.
  rememberMode();
  try {
    window.sessionStorage.setItem(PROVIDER_KEY, JSON.stringify({ id, name }));
  } catch (_) {
    // storage disabled: the SDK cannot keep its state either, and says so
  }
  busy($("providers"), async () => {
    // The provider sends the browser back to the callback page on this
    // page's origin, the redirect URI registered at the provider; Apple
    // posts to the API instead, which redirects to the callback page.
    const frontendRedirectURI = window.location.origin + CALLBACK_PATH + encodeURIComponent(id);
    const url = await ThirdParty.getAuthorisationURLWithQueryParamsAndSetState({
      thirdPartyId: id,
      frontendRedirectURI,
      redirectURIOnProviderDashboard: id === "apple" ? api + "/auth/callback/apple" : undefined,
      shouldTryLinkingWithSessionUser: link || undefined,
    });
    window.location.assign(url);
  });
}

function providerName(id) {
  try {
    const p = JSON.parse(window.sessionStorage.getItem(PROVIDER_KEY));
    if (p && p.id === id && p.name) return p.name;
  } catch (_) {
    // none kept: the id
  }
  return id;
}

// finishSignIn runs on the callback page: the SDK checks the state it
// kept, and sends the code back to the server, which redeems it.
async function finishSignIn() {
  const id = decodeURIComponent(window.location.pathname.slice(CALLBACK_PATH.length));
  const name = providerName(id);
  say("Signing in with " + name + "…");
  let res;
  try {
    res = await ThirdParty.signInAndUp();
  } finally {
    // The code is used up either way: a reload must not present it again.
    window.history.replaceState(null, "", homeURL());
  }
  if (await finishLink(name, res)) return;
  switch (res.status) {
    case "OK":
      say(res.createdNewRecipeUser ? "Account created with " + name + "." : "Signed in with " + name + ".");
      await showMe();
      return;
    case "NO_EMAIL_GIVEN_BY_PROVIDER":
      say(name + " did not give an email address: sign in another way.");
      break;
    default:
      say("Not allowed: " + (res.reason || res.status) + ".");
  }
  show("signed-out");
}

// ---- passwordless sign-in ----

// passwordless is what the server emails to sign in, read from the first
// factors of the login methods: a code (otp-email), a link (link-email),
// or both. Neither, and the page is as without passwordless sign-in.
let passwordless = { codes: false, links: false };
const passwordlessOn = () => passwordless.codes || passwordless.links;
// The address the code or link of the current attempt was sent to.
let pwlEmail = "";

const PWL_RESTART =
  "This sign-in attempt has ended (too many wrong codes, or it is too old). Enter your email for a new code.";
const PWL_RESTART_LINK = "This sign-in attempt has ended. Enter your email for a new link.";
const LINK_RESTART = "This sign-in link has expired or was used already. Ask for a new one.";

async function showPasswordless() {
  const res = await loadLoginMethods();
  const factors = res.firstFactors || [];
  // A tenant (?tenantId=) may sign in without passwords: acme, with
  // -tenants, only with its own provider.
  $("password-signin").hidden = !factors.includes("emailpassword");
  const tenant = new URLSearchParams(window.location.search).get("tenantId");
  if (tenant && tenant !== "public") {
    $("tenant-note").textContent = "Signing in to " + tenant + ".";
    $("tenant-note").hidden = false;
  }
  passwordless = { codes: factors.includes("otp-email"), links: factors.includes("link-email") };
  $("passwordless").hidden = !passwordlessOn();
  $("pwl-send").textContent = passwordless.codes ? "Email me a sign-in code" : "Email me a sign-in link";
  $("pwl-code-field").hidden = !passwordless.codes;
  $("pwl-signin").hidden = !passwordless.codes;
}

function pwlError(text) {
  $("pwl-error").textContent = text;
}

// pwlStart shows the first step, the email, with message as the error.
function pwlStart(message = "") {
  pwlEmail = "";
  $("pwl-start-form").hidden = false;
  $("pwl-code-form").hidden = true;
  $("pwl-code").value = "";
  $("pwl-code").removeAttribute("aria-invalid");
  pwlError(message);
}

// pwlAwaitCode shows the second step: the code sent to email (or, with
// links only, the word that a link was sent), with Resend.
function pwlAwaitCode(email) {
  pwlEmail = email;
  $("pwl-email").value = email;
  $("pwl-start-form").hidden = true;
  $("pwl-code-form").hidden = false;
  $("pwl-sent").textContent = passwordless.codes
    ? passwordless.links
      ? `Enter the code we emailed to ${email}, or open the link in that email.`
      : `Enter the code we emailed to ${email}.`
    : `Open the link we emailed to ${email}, in this browser or another.`;
  pwlError("");
  if (passwordless.codes) $("pwl-code").focus();
}

// resumePasswordless shows the code step again after a reload, when the
// SDK still holds an attempt this page started.
async function resumePasswordless() {
  if (!passwordlessOn()) return;
  const info = await Passwordless.getLoginAttemptInfo();
  if (info && info.email) pwlAwaitCode(info.email);
}

const sent = () => (passwordless.codes ? "code" : "link");

// pwlSignedIn finishes a passwordless sign-in, by code or by link.
async function pwlSignedIn(res) {
  await Passwordless.clearLoginAttemptInfo();
  pwlStart();
  say(res.createdNewRecipeUser ? "Account created." : "Signed in.");
  await showMe();
}

// pwlCodeAnswer shows the answer to a typed code.
async function pwlCodeAnswer(res) {
  const left = res.maximumCodeInputAttempts - res.failedCodeInputAttemptCount;
  const attempts = `${left} ${left === 1 ? "attempt" : "attempts"} left.`;
  switch (res.status) {
    case "OK":
      await pwlSignedIn(res);
      return;
    case "INCORRECT_USER_INPUT_CODE_ERROR":
      pwlError(`Wrong code. ${attempts}`);
      break;
    case "EXPIRED_USER_INPUT_CODE_ERROR":
      pwlError(`This code has expired: press Resend for a new one. ${attempts}`);
      break;
    case "RESTART_FLOW_ERROR":
      await Passwordless.clearLoginAttemptInfo();
      pwlStart(PWL_RESTART);
      $("pwl-email").focus();
      return;
    default:
      await Passwordless.clearLoginAttemptInfo();
      pwlStart("Not allowed: " + (res.reason || res.status) + ".");
      return;
  }
  $("pwl-code").setAttribute("aria-invalid", "true");
  $("pwl-code").select();
}

// finishLinkSignIn posts the link's code (the SDK reads preAuthSessionId
// from the query and the code from the fragment).
async function finishLinkSignIn() {
  $("pwl-link-ask").hidden = true;
  $("pwl-link-continue").hidden = true;
  $("pwl-link-error").textContent = "";
  say("Signing you in…");
  const res = await Passwordless.consumeCode();
  if (res.status === "OK") {
    // The link is spent: a reload must not present it again.
    window.history.replaceState(null, "", homeURL());
    await pwlSignedIn(res);
    return;
  }
  say("");
  $("pwl-link-error").textContent =
    res.status === "RESTART_FLOW_ERROR" ? LINK_RESTART : "Not allowed: " + (res.reason || res.status) + ".";
}

// linkFailure shows a GENERAL_ERROR's message, or another failure, on the
// link page.
function linkFailure(err) {
  say("");
  $("pwl-link-error").textContent = failure(err);
}

// startLinkPage runs on the page sign-in links open. In the browser whose
// attempt the link belongs to, it signs in at once; in another, it waits
// for a click, so that a mail scanner that opens links does not spend it.
async function startLinkPage() {
  show("pwl-link");
  const methods = await loadLoginMethods().catch((err) => console.warn("login methods:", err));
  if (methods && !(methods.firstFactors || []).includes("link-email")) {
    $("pwl-link-error").textContent = "Sign-in links are off on this server.";
    return;
  }
  const id = Passwordless.getPreAuthSessionIdFromURL();
  if (!id || !Passwordless.getLinkCodeFromURL()) {
    $("pwl-link-error").textContent = "This sign-in link is incomplete: open the whole link from the email, or ask for a new one.";
    return;
  }
  const info = await Passwordless.getLoginAttemptInfo();
  if (info && info.preAuthSessionId === id) {
    await finishLinkSignIn().catch(linkFailure);
  } else {
    $("pwl-link-ask").hidden = false;
    $("pwl-link-continue").hidden = false;
  }
}

// ---- passkeys ----

// showPasskeys shows the passkey buttons when the first factors of the
// login methods name webauthn.
async function showPasskeys() {
  const res = await loadLoginMethods();
  $("passkeys").hidden = !(res.firstFactors || []).includes("webauthn");
  // The browser would refuse every ceremony with a bare "not allowed".
  const host = window.location.hostname;
  if (/^[\d.]+$/.test(host) || host.startsWith("[")) {
    const there = new URL(window.location.href);
    there.hostname = "localhost";
    pkError("Passkeys need this page on a domain name, not an IP address: open " + there.href + " instead.");
  }
}

function pkError(text) {
  $("pk-error").textContent = text;
}

// The SDK's statuses for what the browser did, or refused to do, before
// anything reached the server.
const PK_BROWSER = {
  WEBAUTHN_NOT_SUPPORTED: "This browser does not support passkeys here (they need https, or a page on localhost).",
  FAILED_TO_REGISTER_USER: "No passkey was made: the request was cancelled, timed out or refused by the browser.",
  AUTHENTICATOR_ALREADY_REGISTERED: "This device already holds a passkey for this account.",
  FAILED_TO_AUTHENTICATE_USER: "No passkey was used: the browser found none for this site, or the request was cancelled or timed out.",
};

// pkRefused says why a passkey ceremony did not sign in.
function pkRefused(res) {
  if (PK_BROWSER[res.status]) return PK_BROWSER[res.status];
  switch (res.status) {
    case "INVALID_CREDENTIALS_ERROR":
      return "This passkey is not valid here: use another one, or recover your account.";
    case "EMAIL_ALREADY_EXISTS_ERROR":
      return "This email has a passkey already: sign in with it, or recover your account.";
    case "INVALID_EMAIL_ERROR":
      return res.err || "This email is not valid.";
    case "INVALID_OPTIONS_ERROR":
    case "OPTIONS_NOT_FOUND_ERROR":
    case "INVALID_GENERATED_OPTIONS_ERROR":
      return "The request took too long: try again.";
    case "INVALID_AUTHENTICATOR_ERROR":
      return "This authenticator is not accepted: " + (res.reason || "use another one") + ".";
    case "RECOVER_ACCOUNT_TOKEN_INVALID_ERROR":
      return "This recovery link has expired or was used already. Ask for a new one.";
    default:
      return "Not allowed: " + (res.reason || res.status) + ".";
  }
}

// startRecoveryPage runs on the page recovery links open. It waits for a
// click: the browser asks before it makes a passkey, and a mail scanner
// that opens links spends nothing.
function startRecoveryPage() {
  show("pk-recovery");
  if (!params.get("token")) {
    $("pk-recovery-error").textContent = "This recovery link has no token. Ask for a new one.";
    $("pk-recovery-continue").hidden = true;
  }
}

async function recoverWithPasskey() {
  $("pk-recovery-error").textContent = "";
  const res = await Webauthn.registerCredentialWithRecoverAccount({ recoverAccountToken: params.get("token") });
  if (res.status !== "OK") {
    $("pk-recovery-error").textContent = pkRefused(res);
    return;
  }
  // The token is spent, and recovery signs nobody in: back to sign in.
  window.history.replaceState(null, "", homeURL());
  show("signed-out");
  await showPasskeys();
  say("Your new passkey is ready: sign in with it.");
}

// ---- multi-factor auth ----

const MFA_CLAIM = "st-mfa";

// mfa is the state of the MFA step: "setup" (an authenticator app to set
// up: device is its name) or "verify" (a code of one set up); adding is
// true when a signed-in user adds another app, false when the session
// must complete a factor first; email names the user, for a passkey;
// totp is whether the step takes an app's code.
const noMFA = () => ({ step: "verify", device: "", adding: false, email: "", totp: false });
let mfa = noMFA();

function mfaError(text) {
  $("mfa-error").textContent = text;
}

// mfaAnswer shows the error statuses the TOTP and recovery code endpoints
// share, on the field input; it returns false for them.
function mfaAnswer(res, input) {
  let text;
  switch (res.status) {
    case "OK":
      return true;
    case "INVALID_TOTP_ERROR":
    case "INVALID_RECOVERY_CODE_ERROR": {
      const left = res.maxNumberOfFailedAttempts - res.currentNumberOfFailedAttempts;
      const what =
        res.status === "INVALID_TOTP_ERROR"
          ? "That code is wrong, or was used already: wait for the next one."
          : "That recovery code is wrong, or was used already.";
      text =
        left > 0
          ? `${what} ${left} ${left === 1 ? "attempt" : "attempts"} left.`
          : `${what} That was the last attempt for now: wait a few minutes before the next.`;
      break;
    }
    case "LIMIT_REACHED_ERROR":
      text = "Too many wrong codes. Try again in " + waitFor(res.retryAfterMs) + ".";
      break;
    default:
      text = "Not allowed: " + (res.reason || res.message || res.status) + ".";
  }
  mfaError(text);
  input.setAttribute("aria-invalid", "true");
  input.focus();
  input.select();
  return false;
}

// waitFor says a wait in milliseconds in words: minutes, or seconds under
// one.
function waitFor(ms) {
  if (ms >= 60_000) {
    const m = Math.ceil(ms / 60_000);
    return `${m} ${m === 1 ? "minute" : "minutes"}`;
  }
  const s = Math.max(1, Math.ceil(ms / 1000));
  return `${s} ${s === 1 ? "second" : "seconds"}`;
}

// mfaBusy runs fn for the MFA step: a session that ended shows the
// signed-out view, other errors go to the step's error line.
function mfaBusy(fn) {
  return busy($("mfa"), () => endedShowsSignedOut(fn), mfaError);
}

// endedShowsSignedOut runs fn, and shows the signed-out view if the
// session ended: the SDK throws the 401 it could not refresh past.
async function endedShowsSignedOut(fn) {
  try {
    await fn();
  } catch (err) {
    if (err instanceof Response && err.status === 401) {
      signedOut(err);
      return;
    }
    throw err;
  }
}

// mfaAPI calls one of the library's MFA endpoints the SDK has no function
// for (recovery codes), with plain fetch: the SDK's interceptor adds the
// session and refreshes it, as for /api/me. A GENERAL_ERROR is thrown as
// the SDK throws it; a 401 or another failure, as the response.
async function mfaAPI(method, path, body) {
  const init = { method, credentials: "include" };
  if (body !== undefined) {
    init.headers = { "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }
  const res = await fetch(api + "/auth" + path, init);
  if (!res.ok) throw res;
  const json = await res.json();
  if (json.status === "GENERAL_ERROR") throw { isSuperTokensGeneralError: true, message: json.message };
  return json;
}

// showMFA shows the step the session must complete: it asks PUT
// /auth/mfa/info (which also brings the session's claim up to date) what
// is set up. With nothing left to complete, /api/me is asked again, once.
async function showMFA(resynced = false) {
  const info = await MultiFactorAuth.resyncSessionAndFetchMFAInfo();
  const f = info.factors;
  if (f.next.length === 0 && !resynced) {
    await showMe({ resynced: true });
    return;
  }
  const email = (info.emails.emailpassword || [])[0] || "";
  mfa = { ...noMFA(), email };
  $("mfa-title").textContent = "One more step";
  $("mfa-cancel").textContent = "Sign out";
  const totpSetUp = f.alreadySetup.includes("totp");
  const passkeySetUp = f.alreadySetup.includes("webauthn") && f.next.includes("webauthn");
  const passkeyAllowed = !!features.passkeys && f.allowedToSetup.includes("webauthn") && f.next.includes("webauthn");
  $("mfa-passkey-use").hidden = !passkeySetUp;
  $("mfa-passkey-create").hidden = !(passkeyAllowed && !passkeySetUp && !totpSetUp);
  $("mfa-passkeys").hidden = $("mfa-passkey-use").hidden && $("mfa-passkey-create").hidden;
  if (totpSetUp || passkeySetUp) {
    $("mfa-intro").textContent = totpSetUp
      ? "Enter the code your authenticator app shows" + (passkeySetUp ? ", or use your passkey." : ".")
      : "Use your passkey to finish signing in.";
    mfaShowVerify(totpSetUp);
    return;
  }
  if (!f.allowedToSetup.includes("totp")) {
    if (passkeyAllowed) {
      $("mfa-intro").textContent = "Set up a passkey to finish signing in.";
      mfaShowVerify(false);
      return;
    }
    show("mfa");
    mfaShowVerify(false);
    mfaError("This account has no second factor it may set up here.");
    return;
  }
  $("mfa-intro").textContent =
    "This account needs a second step at sign-in: set up an authenticator app." +
    (passkeyAllowed ? " Or use a passkey instead." : "");
  await mfaStartSetup();
}

// mfaShowVerify shows the code field of a set-up app (or, without one,
// only the passkey buttons) and the way to a recovery code.
function mfaShowVerify(totp) {
  mfa.step = "verify";
  mfa.totp = totp;
  $("mfa-setup").hidden = true;
  $("mfa-qr").replaceChildren();
  $("mfa-secret").textContent = "";
  mfaCodeForm(totp);
  show("mfa");
  if (totp) $("mfa-code").focus();
  else if (!$("mfa-passkey-use").hidden) $("mfa-passkey-use").focus();
  else if (!$("mfa-passkey-create").hidden) $("mfa-passkey-create").focus();
}

// mfaCodeForm shows the authenticator code form (or neither form, with
// totp false) and resets both fields and the error.
function mfaCodeForm(totp) {
  $("mfa-code-form").hidden = !totp;
  $("mfa-recovery-form").hidden = true;
  $("mfa-to-recovery").hidden = mfa.step !== "verify" || mfa.adding;
  $("mfa-to-app").hidden = true;
  $("mfa-verify").textContent = mfa.step === "setup" ? "Set up" : "Verify";
  for (const id of ["mfa-code", "mfa-recovery-code"]) {
    $(id).value = "";
    $(id).removeAttribute("aria-invalid");
  }
  mfaError("");
}

// mfaStartSetup makes a new authenticator app for the user (POST
// /auth/totp/device) and shows its QR code and key.
async function mfaStartSetup() {
  let res;
  try {
    res = await verifiedFirst(() => freshly(() => Totp.createDevice()));
  } catch (err) {
    if (mfa.adding || !err?.unverified) throw err;
    // The sign-in's set-up: nothing to do here until the link is opened.
    mfa.step = "setup";
    $("mfa-setup").hidden = true;
    mfaCodeForm(false);
    show("mfa");
    mfaError(err.message + " Once it is verified, reload this page.");
    return;
  }
  if (res === null) {
    mfa = noMFA();
    await showMe();
    return;
  }
  if (res.status !== "OK") {
    // DEVICE_ALREADY_EXISTS_ERROR: the server chose the name, so only a
    // race gets here.
    show("mfa");
    mfaError("Not allowed: " + res.status + ". Reload the page to try again.");
    return;
  }
  mfa.step = "setup";
  mfa.totp = true;
  mfa.device = res.deviceName;
  $("mfa-qr").replaceChildren(qrSVG(res.qrCodeString));
  $("mfa-secret").textContent = res.secret.replace(/(.{4})(?=.)/g, "$1 ");
  $("mfa-setup").hidden = false;
  mfaCodeForm(true);
  show("mfa");
  $("mfa-code").focus();
}

// qrSVG draws text as a QR code, an SVG element with a text alternative.
function qrSVG(text) {
  const qr = qrcode(0, "M");
  // Byte mode takes one byte per character: UTF-8 first.
  qr.addData(String.fromCharCode(...new TextEncoder().encode(text)), "Byte");
  qr.make();
  const n = qr.getModuleCount();
  const quiet = 4; // the white border a reader needs
  const size = n + 2 * quiet;
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-labelledby", "mfa-qr-title");
  svg.setAttribute("shape-rendering", "crispEdges");
  const title = document.createElementNS(NS, "title");
  title.id = "mfa-qr-title";
  title.textContent = "QR code to add this account to an authenticator app; the key below says the same.";
  const bg = document.createElementNS(NS, "rect");
  bg.setAttribute("width", String(size));
  bg.setAttribute("height", String(size));
  bg.setAttribute("fill", "#fff");
  let d = "";
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      if (qr.isDark(r, c)) d += `M${c + quiet},${r + quiet}h1v1h-1z`;
    }
  }
  const path = document.createElementNS(NS, "path");
  path.setAttribute("d", d);
  path.setAttribute("fill", "#000");
  svg.append(title, bg, path);
  return svg;
}

// mfaDone finishes the MFA step: a first set-up makes the recovery codes
// to show once.
async function mfaDone(setUp) {
  let codes;
  // A first set-up makes the codes; so does the first app added on the
  // account page, where two-step sign-in is opt-in.
  if (setUp && (!mfa.adding || (onAccountPage && recoveryRemaining === 0))) {
    const res = await mfaAPI("POST", "/mfa/recovery-codes", {});
    codes = res.codes;
  }
  const adding = mfa.adding;
  mfa = noMFA();
  say(adding ? "Authenticator app added." : setUp ? "Two-step sign-in is set up." : "Signed in.");
  await showMe({ codes });
}

$("mfa-code-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("mfa-code");
  const code = input.value.replace(/\s+/g, "");
  say("");
  mfaError("");
  if (!/^\d{6,8}$/.test(code)) {
    mfaError("Enter the 6-digit code your authenticator app shows.");
    input.setAttribute("aria-invalid", "true");
    input.focus();
    return;
  }
  input.removeAttribute("aria-invalid");
  mfaBusy(async () => {
    if (mfa.step === "setup") {
      const res = await Totp.verifyDevice({ deviceName: mfa.device, totp: code });
      if (res.status === "UNKNOWN_DEVICE_ERROR") {
        // Removed meanwhile (another tab): a new one.
        await mfaStartSetup();
        mfaError("This set-up was cancelled: scan the new QR code.");
        return;
      }
      if (mfaAnswer(res, input)) await mfaDone(!res.wasAlreadyVerified);
      return;
    }
    const res = await Totp.verifyCode({ totp: code });
    if (res.status === "UNKNOWN_USER_ID_ERROR") {
      // The app was removed meanwhile: look again.
      await showMFA();
      return;
    }
    if (mfaAnswer(res, input)) await mfaDone(false);
  });
});

$("mfa-recovery-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("mfa-recovery-code");
  const code = input.value.trim();
  say("");
  mfaError("");
  if (code === "") {
    mfaError("Enter one of your recovery codes.");
    input.setAttribute("aria-invalid", "true");
    input.focus();
    return;
  }
  input.removeAttribute("aria-invalid");
  mfaBusy(async () => {
    const res = await mfaAPI("POST", "/mfa/recovery-code/verify", { code });
    if (!mfaAnswer(res, input)) return;
    mfa = noMFA();
    say(
      res.remaining > 0
        ? `Signed in with a recovery code. ${res.remaining} ${res.remaining === 1 ? "code" : "codes"} left.`
        : "Signed in with your last recovery code: make new ones below.",
    );
    await showMe();
  });
});

$("mfa-to-recovery").addEventListener("click", () => {
  $("mfa-code-form").hidden = true;
  $("mfa-recovery-form").hidden = false;
  $("mfa-to-recovery").hidden = true;
  $("mfa-to-app").hidden = !mfa.totp;
  mfaError("");
  $("mfa-recovery-code").focus();
});

$("mfa-to-app").addEventListener("click", () => {
  mfaCodeForm(true);
  $("mfa-code").focus();
});

$("mfa-passkey-use").addEventListener("click", () => {
  say("");
  mfaError("");
  mfaBusy(async () => {
    const res = await Webauthn.authenticateCredentialWithSignIn({ shouldTryLinkingWithSessionUser: true });
    if (res.status !== "OK") {
      mfaError(pkRefused(res));
      return;
    }
    await mfaDone(false);
  });
});

$("mfa-passkey-create").addEventListener("click", () => {
  say("");
  mfaError("");
  mfaBusy(async () => {
    const res = await verifiedFirst(() =>
      Webauthn.registerCredentialWithSignUp({ email: mfa.email, shouldTryLinkingWithSessionUser: true }),
    );
    if (res.status !== "OK") {
      mfaError(pkRefused(res));
      return;
    }
    // The authenticator app made for the set-up is not needed.
    if (mfa.step === "setup" && mfa.device) await Totp.removeDevice({ deviceName: mfa.device }).catch(() => {});
    await mfaDone(true);
  });
});

$("mfa-cancel").addEventListener("click", () => {
  say("");
  mfaBusy(async () => {
    if (mfa.adding) {
      // The app that was being added is not set up: drop it.
      await Totp.removeDevice({ deviceName: mfa.device });
      mfa = noMFA();
      await showMe();
      return;
    }
    await Session.signOut();
    say("Signed out.");
    show("signed-out");
  });
});

// showMFAManage shows, in the signed-in view with MFA on, how many
// recovery codes are left and the authenticator apps, and codes, if
// given, once.
// known, if given, is what the page knows already ({ remaining, devices }),
// from GET /api/account on the account page.
async function showMFAManage(codes, known) {
  const box = $("mfa-manage");
  if (!mfaOn() && !mfaOffered) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  $("mfa-manage-error").textContent = "";
  if (codes) showRecoveryCodes(codes);
  else $("recovery-new").hidden = true;
  const [count, devices] = known
    ? [{ remaining: known.remaining }, { devices: known.devices }]
    : await Promise.all([mfaAPI("GET", "/mfa/recovery-codes"), Totp.listDevices()]);
  showRecoveryLeft(count.remaining);
  const list = $("totp-devices");
  list.replaceChildren();
  for (const d of devices.devices) {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.textContent = d.verified ? d.name : d.name + " (not set up)";
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", "Remove " + d.name);
    remove.addEventListener("click", () => removeDevice(d.name));
    li.append(name, remove);
    list.append(li);
  }
  if (devices.devices.length === 0) {
    const li = document.createElement("li");
    li.textContent = "None.";
    list.append(li);
  }
  const setUp = devices.devices.some((d) => d.verified);
  $("totp-add").textContent = setUp ? "Add another authenticator app" : "Add an authenticator app";
  // Where two-step sign-in is opt-in, recovery codes come with the first
  // app.
  for (const id of ["recovery-left", "recovery-make", "recovery-make-note"]) $(id).hidden = !setUp && !mfaOn() && !codes;
  if (codes) $("recovery-new-title").focus();
}

let recoveryRemaining;
function showRecoveryLeft(n) {
  recoveryRemaining = n;
  $("recovery-left").textContent = `Recovery codes left: ${n}.`;
}

function showRecoveryCodes(codes) {
  const list = $("recovery-codes");
  list.replaceChildren();
  for (const c of codes) {
    const li = document.createElement("li");
    li.textContent = c;
    list.append(li);
  }
  $("recovery-new").hidden = false;
}

// manageBusy runs fn for the signed-in view's MFA part.
function manageBusy(fn) {
  return busy($("signed-in"), () => endedShowsSignedOut(fn), (text) => ($("mfa-manage-error").textContent = text));
}

function removeDevice(name) {
  say("");
  $("mfa-manage-error").textContent = "";
  manageBusy(async () => {
    // Removing the last app a required factor has answers GENERAL_ERROR,
    // which the SDK throws with the server's message.
    if ((await freshly(() => Totp.removeDevice({ deviceName: name }))) === null) return;
    say(`Removed ${name}.`);
    await showMFAManage();
  });
}

$("recovery-make").addEventListener("click", () => {
  say("");
  $("mfa-manage-error").textContent = "";
  manageBusy(async () => {
    const res = await freshly(() => mfaAPI("POST", "/mfa/recovery-codes", {}));
    await showMFAManage(res?.codes);
  });
});

$("recovery-saved").addEventListener("click", () => {
  $("recovery-new").hidden = true;
  $("recovery-codes").replaceChildren();
  $("recovery-make").focus();
});

$("totp-add").addEventListener("click", () => {
  say("");
  $("mfa-manage-error").textContent = "";
  manageBusy(async () => {
    mfa = { ...noMFA(), step: "setup", adding: true };
    $("mfa-title").textContent = "Add an authenticator app";
    $("mfa-intro").textContent = "";
    $("mfa-cancel").textContent = "Cancel";
    $("mfa-passkeys").hidden = true;
    try {
      await mfaStartSetup();
    } catch (err) {
      mfa = noMFA();
      throw err;
    }
  });
});


// ---- the account page ----

// mfaOffered is true on the account page when the server offers second
// factors to set up (PUT /auth/mfa/info answers), even if it requires
// none (-dev).
let mfaOffered = false;

// account is the last GET /api/account: { user, logins, sessions,
// secondFactors } (see account.go).
let account;

function accountError(text) {
  $("account-error").textContent = text;
}

// accountAPI calls one of the demo's account routes with plain fetch (the
// SDK's interceptor adds the session and refreshes it). It returns the
// JSON of a 2xx answer, and throws the response otherwise.
async function accountAPI(method, path) {
  const res = await fetch(api + "/api/account" + path, { method, credentials: "include" });
  if (!res.ok) throw res;
  return res.json();
}

// accountFailure says what went wrong with an account route: the demo
// answers {"message"} for what the user can act on (the last login method).
async function accountFailure(err) {
  if (err instanceof Response) {
    const body = await err.json().catch(() => ({}));
    if (err.status === 404) return "That is gone already: the list is up to date now.";
    if (body.message && err.status < 500) return body.message;
  }
  return failure(err);
}

// accountBusy runs an action of the account page: buttons disabled while
// it runs, a session that ended shows the signed-out view, an error is
// announced in the page's alert, and the view is read again either way.
async function accountBusy(fn) {
  say("");
  accountError("");
  const buttons = $("account").querySelectorAll("button");
  buttons.forEach((b) => (b.disabled = true));
  try {
    await endedShowsSignedOut(fn);
  } catch (err) {
    accountError(await accountFailure(err));
    await showAccount().catch(() => {});
  } finally {
    buttons.forEach((b) => (b.disabled = false));
  }
}

// showAccount reads GET /api/account and shows it. A session with a
// second factor to complete gets the MFA step first, as /api/me does.
async function showAccount(mfaDone = {}) {
  const res = await fetch(api + "/api/account", { credentials: "include" });
  if ((await refusedClaim(res)) === MFA_CLAIM) {
    await showMFA(mfaDone.resynced);
    return;
  }
  if (res.status === 401) {
    signedOut(res);
    return;
  }
  if (!res.ok) throw new Error("GET /api/account answered " + res.status);
  account = await res.json();
  const methods = await loadLoginMethods().catch(() => ({ firstFactors: [], thirdParty: { providers: [] } }));
  // Second factors: what PUT /auth/mfa/info says may be set up; a server
  // without MFA answers 404.
  const info = await MultiFactorAuth.resyncSessionAndFetchMFAInfo().catch(() => null);
  mfaOffered = !!info && [...info.factors.allowedToSetup, ...info.factors.alreadySetup].includes("totp");
  const joined = new Date(account.user.timeJoined).toLocaleDateString();
  // With -admin, the session's token carries its roles (st-role), as the
  // SDKs read them.
  const payload = await Session.getAccessTokenPayloadSecurely().catch(() => ({}));
  const roles = Array.isArray(payload["st-role"]?.v) ? ` · roles: ${payload["st-role"].v.join(", ") || "none"}` : "";
  $("account-who").textContent = `${account.user.email || "No email"} · member since ${joined}${roles}`;
  showLogins(methods);
  showSessions(methods);
  showPassword();
  $("account-email").hidden = !account.logins.some((l) => MOVES_WITH_EMAIL.includes(l.method) && l.email);
  show("account");
  startLive();
  await Promise.all([
    showAccountPasskeys((methods.firstFactors || []).includes("webauthn")),
    showMFAManage(mfaDone.codes, {
      remaining: account.secondFactors.recoveryCodes,
      devices: account.secondFactors.totp,
    }),
  ]);
  flashed();
}

// loginName names a login method as the page shows it.
function loginName(l, methods) {
  switch (l.method) {
    case "emailpassword":
      return "Email and password";
    case "passwordless":
      return "Code or link by email";
    case "webauthn":
      return "Passkey";
    case "thirdparty": {
      const p = (methods.thirdParty?.providers || []).find((p) => p.id === l.provider);
      return (p && p.name) || l.provider;
    }
  }
  return l.method;
}

// item makes a list item: a title, details, and buttons.
function item(title, details, buttons = []) {
  const li = document.createElement("li");
  const text = document.createElement("div");
  const what = document.createElement("div");
  what.className = "what";
  what.append(...[].concat(title));
  text.append(what);
  for (const d of details.filter(Boolean)) {
    const p = document.createElement("div");
    p.className = "detail";
    p.append(...[].concat(d));
    text.append(p);
  }
  li.append(text);
  if (buttons.length > 0) {
    const actions = document.createElement("div");
    actions.className = "actions";
    actions.append(...buttons);
    li.append(actions);
  }
  return li;
}

// none is the item of an empty list.
function none() {
  const li = document.createElement("li");
  li.textContent = "None.";
  return li;
}

function badge(text, warn = false) {
  const b = document.createElement("span");
  b.className = warn ? "badge warn" : "badge";
  b.textContent = text;
  return b;
}

function button(text, label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (label) b.setAttribute("aria-label", label);
  b.addEventListener("click", onClick);
  return b;
}

// showLogins lists the ways to sign in (passkeys have their own list),
// each with its email's verification state and Unlink, and the buttons
// that link a provider.
function showLogins(methods) {
  const list = $("account-logins");
  list.replaceChildren();
  for (const l of account.logins) {
    if (l.method === "webauthn") continue;
    const name = loginName(l, methods);
    const state = [];
    if (l.email) {
      state.push(l.email + " ");
      state.push(l.verified ? badge("verified") : badge("not verified", true));
    }
    const buttons = [
      button("Unlink", `Unlink ${name}${l.email ? " (" + l.email + ")" : ""}`, () => unlink(l, name)),
    ];
    if (l.current && !l.verified && verifying()) {
      buttons.unshift(button("Email me a verification link", `Email ${l.email} a verification link`, sendAccountVerification));
    }
    list.append(item(name, [state, l.current ? "You signed in with this here: unlinking it signs you out here." : ""], buttons));
  }
  const passkeys = account.logins.filter((l) => l.method === "webauthn").length;
  if (passkeys > 0) list.append(item(passkeys === 1 ? "1 passkey" : `${passkeys} passkeys`, ["Listed under Passkeys below."]));
  // Link a provider: its sign-in, sent with this session to add it here.
  const box = $("account-links");
  box.querySelectorAll("button").forEach((b) => b.remove());
  const providers = methods.thirdParty?.providers || [];
  box.hidden = providers.length === 0;
  $("account-links-note").textContent =
    "Sign in with a provider to add it to this account, whatever email it gives; one that is another account's already is refused, never moved." +
    (features.accountLinking ? " Account linking is on: the provider must vouch for the address it gives." : "");
  for (const p of providers) {
    box.append(button("Link " + (p.name || p.id), null, () => linkProvider(p.id, p.name || p.id)));
  }
  $("account-pwl-form").hidden = !(methods.firstFactors || []).includes("otp-email");
}

// ---- adding an email for sign-in codes ----

// The form asks for a code for the address (createCode with
// shouldTryLinkingWithSessionUser, which the SDK keeps for consumeCode),
// then for the code, which adds the address to this account.
let pwlAdding = "";

$("account-pwl-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = $("account-pwl-form");
  clearErrors(form);
  accountBusy(async () => {
    if (!pwlAdding) {
      if ((await freshly(() => accountAPI("POST", "/fresh"))) === null) return showAccount();
      const email = $("account-pwl-email").value.trim();
      const res = await Passwordless.createCode({ email, shouldTryLinkingWithSessionUser: true });
      if (res.status !== "OK") {
        fieldErrors([{ id: "email", error: res.reason || "Enter a valid email address." }], { email: "account-pwl-email" });
        return;
      }
      pwlAdding = email;
      $("account-pwl-code-row").hidden = false;
      $("account-pwl-submit").textContent = "Add this email";
      $("account-pwl-code").focus();
      say(`A code is on its way to ${email}.`);
      return;
    }
    const res = await Passwordless.consumeCode({ userInputCode: $("account-pwl-code").value.trim() });
    let told = "";
    switch (res.status) {
      case "OK":
        told = `Added ${pwlAdding}: codes sent to it sign in to this account.`;
        break;
      case "INCORRECT_USER_INPUT_CODE_ERROR":
      case "EXPIRED_USER_INPUT_CODE_ERROR":
        fieldErrors([{ id: "code", error: "That is not the code in the email." }], { code: "account-pwl-code" });
        return;
      default:
        accountError(res.reason || "Not added: ask for a new code.");
    }
    pwlAdding = "";
    $("account-pwl-code-row").hidden = true;
    $("account-pwl-submit").textContent = "Send a code";
    $("account-pwl-email").value = $("account-pwl-code").value = "";
    await Passwordless.clearLoginAttemptInfo().catch(() => {});
    await showAccount();
    if (told) say(told);
  });
});

// ago says how long ago a time (Unix milliseconds) was, in words.
const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
function ago(ms) {
  const s = Math.round((ms - Date.now()) / 1000);
  if (Math.abs(s) < 60) return "just now";
  const m = Math.round(s / 60);
  if (Math.abs(m) < 60) return relative.format(m, "minute");
  const h = Math.round(m / 60);
  if (Math.abs(h) < 24) return relative.format(h, "hour");
  return relative.format(Math.round(h / 24), "day");
}

function when(ms) {
  const t = document.createElement("time");
  t.dateTime = new Date(ms).toISOString();
  t.title = new Date(ms).toLocaleString();
  t.textContent = ago(ms);
  return t;
}

// showSessions lists the live sessions, this one first, with where they
// started and a button to end each other one.
function showSessions(methods) {
  const list = $("account-sessions");
  list.replaceChildren();
  const sessions = [...account.sessions].sort((a, b) => b.current - a.current);
  const byLogin = Object.fromEntries(account.logins.map((l) => [l.id, l]));
  for (const s of sessions) {
    const device = s.from ? s.from.device || "Unknown browser" : "Unknown device";
    const where = s.from ? `from ${s.from.address}` : "started before the demo last started";
    const login = byLogin[s.loginId];
    const by = login ? loginName(login, methods) : "a login method since removed";
    const title = s.current ? [device + " ", badge("this device")] : device;
    const buttons = s.current
      ? []
      : [button("Sign out", `Sign out the session on ${device}, ${where}`, () => revokeSession(s, device))];
    list.append(item(title, [where, ["Signed in ", when(s.createdAt), " with " + by.replace(/^(Email|Code|Passkey)/, (w) => w.toLowerCase()) + ", last active ", when(s.refreshedAt)]], buttons));
  }
  $("account-revoke-others").hidden = sessions.length < 2;
}

function revokeSession(s, device) {
  accountBusy(async () => {
    await accountAPI("POST", `/sessions/${encodeURIComponent(s.handle)}/revoke`);
    await showAccount();
    say(`Signed out the session on ${device}.`);
    $("account-sessions-title").focus();
  });
}

$("account-revoke-others").addEventListener("click", () => {
  accountBusy(async () => {
    const res = await accountAPI("POST", "/sessions/revoke-others");
    await showAccount();
    say(res.revoked === 1 ? "Signed out 1 other session." : `Signed out ${res.revoked} other sessions.`);
    $("account-sessions-title").focus();
  });
});

function unlink(l, name) {
  accountBusy(async () => {
    const res = await freshly(() => accountAPI("POST", `/logins/${encodeURIComponent(l.id)}/unlink`));
    if (res === null) return showAccount();
    if (res.signedOut) {
      // This session was started with it, and ended with it.
      await Session.signOut().catch(() => {});
      show("signed-out");
      say(`Unlinked ${name}, which you had signed in with here: sign in another way.`);
      return;
    }
    await showAccount();
    say(`Unlinked ${name}: it no longer signs in to this account.`);
    $("account-logins-title").focus();
  });
}

function sendAccountVerification() {
  accountBusy(async () => {
    // A GENERAL_ERROR (a minute between two emails) is thrown with its
    // message.
    const res = await EmailVerification.sendVerificationEmail();
    await showAccount();
    say(res.status === "OK" ? "A verification link is on its way." : "Your email is already verified.");
  });
}

// ---- the live list of sessions ----

// The account page keeps a WebSocket to GET /api/live open, which sends
// the sessions whenever they change ({ type: "sessions", sessions }, as
// in GET /api/account) and closes with LIVE_ENDED when this session ends
// (signed out elsewhere, ended from another device, token theft): the
// page then shows the signed-out view. It closes with LIVE_REFRESH when
// the access token it was opened with expires: the page refreshes the
// session and connects again. After any other close it connects again
// once GET /api/account answers (the SDK refreshes the session on its
// 401 if it must; a session gone shows the signed-out view), waiting
// longer each time in a row, up to 30 seconds.
const LIVE_ENDED = 4001;
const LIVE_REFRESH = 4002;
let live = null;
let liveFailures = 0;
const liveBackoff = () => Math.min(30_000, 1000 * 2 ** liveFailures++);

function startLive() {
  if (live || !window.WebSocket) return;
  const url = new URL("/api/live", api);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url);
  live = ws;
  let heard = false;
  ws.addEventListener("open", async () => {
    // A browser cannot set the Authorization header of a WebSocket: in
    // header mode the access token is the first message. In cookie mode
    // the cookie came with the handshake.
    if (mode !== "header") return;
    const token = (await Session.getAccessToken()) || "";
    // The page may have closed it meanwhile (quietLive, as a sign-in
    // again starts): sending then is an error in the console.
    if (ws.readyState === WebSocket.OPEN) ws.send(token);
  });
  ws.addEventListener("message", async (e) => {
    heard = true;
    liveFailures = 0;
    const msg = JSON.parse(e.data);
    if (msg.type !== "sessions" || !account || $("account").hidden) return;
    if (JSON.stringify(msg.sessions) === JSON.stringify(account.sessions)) return;
    // A session of a login method the page does not know yet (just
    // linked): the whole page again.
    if (msg.sessions.some((s) => !account.logins.some((l) => l.id === s.loginId))) {
      await showAccount().catch(() => {});
      return;
    }
    account.sessions = msg.sessions;
    showSessions(await loadLoginMethods().catch(() => ({ firstFactors: [], thirdParty: { providers: [] } })));
  });
  ws.addEventListener("close", (e) => {
    if (live === ws) live = null;
    if (ws.quiet || $("account").hidden) return;
    if (e.code === LIVE_ENDED) {
      liveEnded(e.reason);
      return;
    }
    const refresh = e.code === LIVE_REFRESH;
    setTimeout(() => resumeLive(refresh), refresh && heard ? 0 : liveBackoff());
  });
}

// liveEnded shows the signed-out view when the server closed the live
// list because this session ended; reason is "session ended: <why>",
// why as in an Auth-Reason header.
async function liveEnded(reason) {
  // The SDK forgets the session's tokens.
  await Session.signOut().catch(() => {});
  show("signed-out");
  say(endedBecause[reason.split(": ")[1]] || "You were signed out.");
}

async function resumeLive(refresh) {
  if (live || $("account").hidden) return;
  try {
    if (refresh) await Session.attemptRefreshingSession();
    const res = await fetch(api + "/api/account", { credentials: "include" });
    if (res.status === 401) {
      signedOut(res);
      return;
    }
    if (!res.ok) throw res;
    startLive();
  } catch (_) {
    setTimeout(() => resumeLive(false), liveBackoff());
  }
}

// quietLive closes the live list while this session is replaced (a new
// sign-in, a changed password): the old session ends, which must not
// show the signed-out view. showAccount opens it again.
function quietLive() {
  const ws = live;
  live = null;
  if (ws) {
    ws.quiet = true;
    ws.close();
  }
}

// ---- the password, the fresh sign-in, deleting the account ----

// The library's own routes for these (PROTOCOL.md): the SDK has no
// function for them, so plain fetch, whose session the SDK's interceptor
// adds, and whose new tokens (a changed password carries the session on
// under a new handle) it keeps.
const FRESH_CLAIM = "st-fresh";

function hasPassword() {
  return !!account && account.logins.some((l) => l.method === "emailpassword");
}

function authPost(path, body) {
  const init = { method: "POST", credentials: "include" };
  if (body !== undefined) {
    init.headers = { "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }
  return fetch(api + "/auth" + path, init);
}

// freshly runs send: a fetch, or a call that throws the answer when it
// is not a success (the SDK's functions, accountAPI, mfaAPI). When the
// answer is the fresh sign-in's 403 it has the user sign in again and
// runs send once more. It returns what send returns, or null when the
// user gave up.
async function freshly(send) {
  try {
    const res = await send();
    if (!(res instanceof Response) || (await refusedClaim(res)) !== FRESH_CLAIM) return res;
  } catch (err) {
    if (!(err instanceof Response) || (await refusedClaim(err)) !== FRESH_CLAIM) throw err;
  }
  if (!(await signInAgain())) return null;
  return send();
}

// reauthWay is how the user proves it is them again, by what the account
// has. A second factor comes first: completing it again counts, in the
// same session, where a new sign-in would ask for it anyway. So: a code
// of an authenticator app, or a passkey that is a second factor; else
// the password, or a passkey that signs in; "" for none of them.
async function reauthWay(acc) {
  const info = await MultiFactorAuth.resyncSessionAndFetchMFAInfo().catch(() => null);
  const factors = info ? info.factors.alreadySetup : [];
  if (factors.includes("totp")) return "code";
  if (factors.includes("webauthn")) return "factor-passkey";
  if (acc.logins.some((l) => l.method === "emailpassword")) return "password";
  if (acc.logins.some((l) => l.method === "webauthn")) return "passkey";
  return "";
}

// signInAgain asks for a code, the password or a passkey, whichever
// reauthWay gives. It resolves true once the session is fresh again,
// false if the user cancels or the account has none of them.
async function signInAgain() {
  const acc = account || (await accountAPI("GET", ""));
  const way = await reauthWay(acc);
  const passkey = way.endsWith("passkey");
  if (!way) {
    const text = "For this, sign out and sign in again, then try once more: your last sign-in is more than a few minutes old.";
    accountError(text);
    $("mfa-manage-error").textContent = text;
    return false;
  }
  const form = $("account-reauth");
  form.hidden = false;
  $("account-reauth-password-row").hidden = way !== "password";
  $("account-reauth-code-row").hidden = way !== "code";
  $("account-reauth-submit").hidden = passkey;
  $("account-reauth-submit").textContent = way === "code" ? "Verify" : "Sign in again";
  $("account-reauth-passkey").hidden = !passkey;
  // The action that asks is running, with the page's buttons disabled
  // (busy): this form's are the way on.
  form.querySelectorAll("button").forEach((b) => (b.disabled = false));
  clearErrors(form);
  for (const id of ["account-reauth-password", "account-reauth-code"]) $(id).value = "";
  (passkey ? $("account-reauth-passkey") : $(way === "code" ? "account-reauth-code" : "account-reauth-password")).focus();
  return new Promise((resolve) => {
    const done = (ok) => {
      form.hidden = true;
      form.onsubmit = null;
      $("account-reauth-cancel").onclick = $("account-reauth-passkey").onclick = null;
      resolve(ok);
    };
    // fn resolves true once fresh, false to let the user try again, and
    // null when the session is gone.
    const prove = (fn) => {
      clearErrors(form);
      busy(form, async () => {
        const ok = await fn(acc);
        if (ok !== false) done(!!ok);
      }, reauthError);
    };
    $("account-reauth-cancel").onclick = () => done(false);
    $("account-reauth-passkey").onclick = () => prove((acc) => reauthPasskey(acc, way === "factor-passkey"));
    form.onsubmit = (e) => {
      e.preventDefault();
      prove(way === "code" ? reauthCode : reauthPassword);
    };
  });
}

function reauthError(text) {
  $("account-reauth-error").textContent = text;
}

// reauthCode completes TOTP again with the code typed: the session is
// the same one, fresh.
async function reauthCode() {
  const code = $("account-reauth-code").value.replace(/\s+/g, "");
  const res = await Totp.verifyCode({ totp: code });
  if (res.status === "OK") return true;
  const error = res.status === "LIMIT_REACHED_ERROR" ? "Too many wrong codes: wait a little and try again." : "That is not the code your app shows.";
  fieldErrors([{ id: "code", error }], { code: "account-reauth-code" });
  return false;
}

// reauthPassword signs in with the password, which replaces this
// session's tokens, and ends the session it replaced.
async function reauthPassword(acc) {
  const email = acc.logins.find((l) => l.method === "emailpassword").email;
  const old = acc.sessions.find((s) => s.current);
  quietLive();
  const res = await EmailPassword.signIn({
    formFields: [
      { id: "email", value: email },
      { id: "password", value: $("account-reauth-password").value },
    ],
  });
  if (res.status !== "OK") {
    fieldErrors([{ id: "password", error: "That is not your password." }], { password: "account-reauth-password" });
    return false;
  }
  // The sign-in started a session of its own: the old one is done.
  if (old) await accountAPI("POST", `/sessions/${encodeURIComponent(old.handle)}/revoke`).catch(() => {});
  return true;
}

// reauthPasskey signs in with a passkey. As a second factor, the passkey
// completes it again in this session, and must be this user's; otherwise
// the sign-in starts a session, which must be this user's too, or it is
// ended at once.
async function reauthPasskey(acc, asFactor) {
  const old = acc.sessions.find((s) => s.current);
  quietLive();
  const res = await Webauthn.authenticateCredentialWithSignIn(asFactor ? { shouldTryLinkingWithSessionUser: true } : {});
  if (res.status !== "OK") {
    reauthError(pkRefused(res));
    return false;
  }
  if (asFactor) return true;
  if (res.user.id !== acc.user.id) {
    await Session.signOut().catch(() => {});
    show("signed-out");
    say("That passkey signs in to another account: you are signed out. Sign in again as yourself.");
    return null;
  }
  if (old) await accountAPI("POST", `/sessions/${encodeURIComponent(old.handle)}/revoke`).catch(() => {});
  return true;
}

$("account-password-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = $("account-password-form");
  clearErrors(form);
  accountBusy(async () => {
    const fields = [{ id: "newPassword", value: $("account-new-password").value }];
    const had = hasPassword();
    if (had) fields.unshift({ id: "oldPassword", value: $("account-old-password").value });
    quietLive();
    const res = await freshly(() => authPost("/user/password/change", { formFields: fields }));
    if (res === null) return showAccount();
    if (res.status === 401) throw res;
    if (res.status === 403) {
      // An operator acting as the user (the admin page) changes nothing.
      const body = await res.json().catch(() => ({}));
      await showAccount();
      accountError(body.message || "Not allowed.");
      return;
    }
    if (!res.ok) throw res;
    const body = await res.json();
    switch (body.status) {
      case "OK":
        $("account-old-password").value = $("account-new-password").value = "";
        await showAccount();
        say(had ? "Your password was changed, and every other session was signed out." : "Your password was added, and every other session was signed out.");
        return;
      case "FIELD_ERROR":
        fieldErrors(body.formFields, { oldPassword: "account-old-password", newPassword: "account-new-password" });
        break;
      case "WRONG_CREDENTIALS_ERROR":
        fieldErrors([{ id: "oldPassword", error: "That is not your current password." }], { oldPassword: "account-old-password" });
        break;
      case "NO_EMAIL_FOR_PASSWORD_ERROR":
        accountError("A password needs an email this account has proven and no other account has a password for: sign in once with a provider that vouches for it, or a code sent to it.");
        break;
      default:
        accountError("Something went wrong: " + body.status + ".");
    }
    await showAccount();
  });
});

$("account-delete").addEventListener("click", () => {
  if (!window.confirm("Delete your account? This cannot be undone.")) return;
  accountBusy(async () => {
    quietLive();
    const res = await freshly(() => authPost("/user/delete"));
    if (res === null) return showAccount();
    if (!res.ok) throw res;
    const body = await res.json();
    if (body.status === "DELETE_NOT_ALLOWED") {
      accountError(body.reason);
      await showAccount();
      return;
    }
    show("signed-out");
    say("Your account was deleted.");
  });
});

// ---- the account's email ----

// MOVES_WITH_EMAIL are the login methods whose address a change moves; a
// provider's login keeps the provider's, so an account of providers only
// has no address of its own to change.
const MOVES_WITH_EMAIL = ["emailpassword", "passwordless", "webauthn"];

$("account-email-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = $("account-email-form");
  clearErrors(form);
  accountBusy(async () => {
    const email = $("account-new-email").value.trim();
    const res = await freshly(() => authPost("/user/email/change", { email }));
    if (res === null) return showAccount();
    if (!res.ok) throw res;
    const body = await res.json();
    switch (body.status) {
      case "OK":
        $("account-new-email").value = "";
        await showAccount();
        say(`A link is on its way to ${email}: open it to make the change.`);
        return;
      case "FIELD_ERROR":
        fieldErrors(body.formFields, { email: "account-new-email" });
        break;
      case "GENERAL_ERROR":
        accountError(body.message);
        break;
      default:
        accountError(body.reason || "Something went wrong: " + body.status + ".");
    }
  });
});

// startEmailChangePage runs on the pages of the links that change the
// account's email and undo a change. Each waits for a click, so that a
// mail scanner that opens links does not use the token up.
function startEmailChangePage() {
  show("email-change");
  const token = params.get("token");
  if (!token) {
    say("This link has no token.");
    return;
  }
  const button = $(onEmailUndoPage ? "email-change-undo" : "email-change-confirm");
  $("email-change-note").textContent = onEmailUndoPage
    ? "If you did not change the email address of your account, undo it: your old address comes back, and every session is signed out."
    : "Open the change, signed in to your account in this browser: this address becomes the one of your account.";
  button.hidden = false;
  button.onclick = () => busy($("email-change"), () => useEmailChangeLink(token, button));
}

async function useEmailChangeLink(token, button) {
  const res = await fetch(api + "/auth/user/email/change/" + (onEmailUndoPage ? "undo" : "verify"), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
  });
  if (res.status === 401 && !onEmailUndoPage) {
    // The change is confirmed only by a session of the account it moves.
    say("Sign in to your account in this browser first, then open the link again.");
    return;
  }
  if (!res.ok) throw res;
  const body = await res.json();
  button.hidden = true;
  switch (body.status) {
    case "OK":
      if (onEmailUndoPage) {
        // Every session ended: this browser's too.
        await Session.signOut().catch(() => {});
        say(`${body.email} is the address of your account again, and every session was signed out. If someone else made the change, choose a new password: ask for a reset link from the sign-in page.`);
      } else {
        say(`The email address of your account is now ${body.email}.`);
      }
      return;
    case "EMAIL_ALREADY_EXISTS_ERROR":
      say("Another account has this address now: nothing was changed.");
      return;
    default:
      say("This link has expired or was used already.");
  }
}

// showPassword shows the password form as it fits the user: change the
// password, or add one.
function showPassword() {
  const has = hasPassword();
  $("account-old-password-row").hidden = !has;
  $("account-password-submit").textContent = has ? "Change password" : "Add a password";
  $("account-password-note").textContent = has
    ? "Changing the password signs out every other session."
    : "You sign in without a password. Adding one (for the email this account owns) needs a sign-in within the last few minutes.";
}

// ---- linking a provider ----

// The account page keeps who is signed in while the browser visits the
// provider: the callback page tells a link from a sign-in to another
// account by it, and ends the session it replaced.
const LINK_KEY = "latchkit-auth-demo.link";
const FLASH_KEY = "latchkit-auth-demo.flash";

// linkProvider adds provider id to the account: the link needs a recent
// sign-in, asked for here (the demo's POST /api/account/fresh) rather
// than after the trip to the provider.
function linkProvider(id, name) {
  accountBusy(async () => {
    if ((await freshly(() => accountAPI("POST", "/fresh"))) === null) return showAccount();
    try {
      window.sessionStorage.setItem(LINK_KEY, JSON.stringify({ userId: account.user.id }));
    } catch (_) {
      // storage disabled: the callback page takes it for a sign-in
    }
    signInWith(id, name, true);
  });
}

// takeLink returns the link the account page started, and forgets it.
function takeLink() {
  try {
    const link = JSON.parse(window.sessionStorage.getItem(LINK_KEY));
    window.sessionStorage.removeItem(LINK_KEY);
    return link;
  } catch (_) {
    return null;
  }
}

// backToAccount opens the account page, which says text.
function backToAccount(text) {
  try {
    window.sessionStorage.setItem(FLASH_KEY, text);
  } catch (_) {
    // storage disabled: no message
  }
  window.location.assign(accountURL());
}

function flashed() {
  try {
    const text = window.sessionStorage.getItem(FLASH_KEY);
    window.sessionStorage.removeItem(FLASH_KEY);
    if (text) {
      say(text);
      $("account-logins-title").focus();
    }
  } catch (_) {
    // storage disabled
  }
}

// finishLink finishes a sign-in the account page started to link a
// provider, and returns false for any other sign-in. The session goes
// on: the answer is its user, with the provider added.
async function finishLink(name, res) {
  const link = takeLink();
  if (!link) return false;
  if (res.status !== "OK") {
    backToAccount(
      res.status === "NO_EMAIL_GIVEN_BY_PROVIDER"
        ? `Not linked: ${name} did not give an email address.`
        : `Not linked: ${res.reason || res.status}.`,
    );
    return true;
  }
  if (res.user.id !== link.userId) {
    say(
      `${name} signed you in to another account, not linked to yours: it did not vouch for your account's verified email.`,
    );
    await showMe();
    return true;
  }
  backToAccount(`Linked ${name}: you can sign in with it now.`);
  return true;
}

// ---- passkeys on the account page ----

async function showAccountPasskeys(on) {
  $("account-passkeys").hidden = !on;
  if (!on) return;
  const res = await Webauthn.listCredentials();
  const list = $("account-passkey-list");
  list.replaceChildren();
  if (res.status !== "OK") {
    list.append(item("Could not list your passkeys.", [res.message || res.status]));
    return;
  }
  res.credentials.forEach((c, i) => {
    const name = `Passkey ${i + 1}`;
    list.append(item(name, [["Added ", when(c.createdAt)]], [button("Remove", `Remove ${name}`, () => removePasskey(c, name))]));
  });
  if (res.credentials.length === 0) list.append(none());
}

function removePasskey(c, name) {
  accountBusy(async () => {
    const res = await freshly(() => Webauthn.removeCredential({ webauthnCredentialId: c.webauthnCredentialId }));
    if (res === null) return showAccount();
    if (res.status === "GENERAL_ERROR") throw { isSuperTokensGeneralError: true, message: res.message };
    await showAccount();
    say(res.status === "OK" ? `Removed ${name}.` : "That passkey was removed already.");
    $("account-passkeys-title").focus();
  });
}

$("account-passkey-add").addEventListener("click", () => {
  accountBusy(async () => {
    // A new passkey is registered for a login method with an email: this
    // session's, or else the first.
    const of = [...account.logins].sort((a, b) => b.current - a.current).find((l) => l.email);
    if (!of) throw new Error("this account has no email to name a passkey with");
    const res = await verifiedFirst(() =>
      freshly(() => Webauthn.createAndRegisterCredentialForSessionUser({ email: of.email, recipeUserId: of.id })),
    );
    if (res === null) return showAccount();
    if (res.status === "GENERAL_ERROR") throw { isSuperTokensGeneralError: true, message: res.message };
    if (res.status !== "OK") {
      accountError(pkRefused(res));
      return;
    }
    await showAccount();
    say("Passkey added: you can sign in with it now.");
    $("account-passkeys-title").focus();
  });
});

async function start() {
  if (onAccountPage) {
    // The account page shows the two-step sign-in part of the signed-in
    // view in its own place.
    const box = $("mfa-manage");
    $("account-mfa").append(box);
    // One level down, under "Your account".
    for (const h of box.querySelectorAll("h2, h3")) {
      const lower = document.createElement(h.tagName === "H2" ? "h3" : "h4");
      for (const a of h.attributes) lower.setAttribute(a.name, a.value);
      lower.textContent = h.textContent;
      h.replaceWith(lower);
    }
  }
  if (api !== window.location.origin) {
    $("api").textContent = "API: " + api;
    $("api").hidden = false;
  }
  $("mode").textContent = "Token transfer: " + mode;
  $("mode").hidden = false;
  $("home").href = homeURL();
  $("verify-email-home").href = homeURL();
  $("email-change-home").href = homeURL();
  $("pwl-link-home").href = homeURL();
  $("pk-recovery-home").href = homeURL();
  $("account-home").href = homeURL();
  $("account-link").href = accountURL();
  $("admin-link").href = adminURL();
  $("admin-home").href = homeURL();

  // A server without /api/config is taken to verify nothing.
  const loaded = loadFeatures().catch((err) => console.warn("config:", err));
  if (onVerifyPage) {
    await loaded;
    await startVerifyPage();
    return;
  }

  if (onLinkPage) {
    await loaded;
    await startLinkPage();
    return;
  }

  if (onInvitationPage) {
    await loaded;
    await startInvitationPage();
    return;
  }

  if (onEmailChangePage || onEmailUndoPage) {
    startEmailChangePage();
    return;
  }

  if (onRecoveryPage) {
    await loaded;
    startRecoveryPage();
    return;
  }

  if (onResetPage) {
    show("reset");
    if (!params.get("token")) say("This reset link has no token. Ask for a new one.");
    return;
  }
  // The buttons are for the signed-out view; a server that cannot list
  // providers leaves the page as it was without them.
  const providers = Promise.all([showProviders(), showPasswordless(), showPasskeys()]).catch((err) =>
    console.warn("login methods:", err),
  );
  await loaded;
  if (onCallbackPage) {
    try {
      await finishSignIn();
    } catch (err) {
      if (takeLink()) {
        backToAccount("Not linked: " + failure(err));
        return;
      }
      show("signed-out");
      say(failure(err));
    }
    return;
  }
  await providers;
  if (await Session.doesSessionExist()) {
    await showMe();
  } else {
    show("signed-out");
    if (onAccountPage) say("Sign in to see your account.");
    if (onAdminPage) say("Sign in as an admin to see the admin page.");
    await resumePasswordless();
  }
}

$("auth-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.currentTarget;
  const up = e.submitter && e.submitter.value === "signup";
  clearErrors(form);
  say("");
  busy(form, async () => {
    const formFields = [
      { id: "email", value: $("email").value },
      { id: "password", value: $("password").value },
    ];
    const res = up ? await EmailPassword.signUp({ formFields }) : await EmailPassword.signIn({ formFields });
    switch (res.status) {
      case "OK":
        $("password").value = "";
        say(up ? "Account created." : "");
        await showMe();
        break;
      case "FIELD_ERROR":
        fieldErrors(res.formFields, {});
        say("Check the fields above.");
        break;
      case "WRONG_CREDENTIALS_ERROR":
        say("Wrong email or password.");
        break;
      default:
        say("Not allowed: " + (res.reason || res.status) + ".");
    }
  });
});

$("signout").addEventListener("click", (e) => {
  const section = $("signed-in");
  busy(section, async () => {
    await Session.signOut();
    say("Signed out.");
    show("signed-out");
  });
});

$("verify-send").addEventListener("click", () => {
  say("");
  busy($("verification"), async () => {
    // A GENERAL_ERROR, such as the one a minute's wait between two emails
    // gives, is thrown, and busy shows its message.
    const res = await EmailVerification.sendVerificationEmail();
    if (res.status === "OK") {
      say("A verification link is on its way to " + $("me-email").textContent + ".");
    } else {
      // EMAIL_ALREADY_VERIFIED_ERROR: the session's claim is up to date now.
      say("Your email is already verified.");
      if (features.emailVerification === "required") await showMe();
      else await showVerification();
    }
  });
});

$("verify-check").addEventListener("click", () => {
  say("");
  busy($("verification"), recheck);
});

$("verify-email-confirm").addEventListener("click", () => {
  busy($("verify-email"), verifyFromLink);
});

$("admin-invite-form").addEventListener("submit", (e) => {
  e.preventDefault();
  adminSay("");
  busy(e.currentTarget, async () => {
    try {
      await adminCall("POST", "/api/admin/tenants/invite", { tenant: "acme", email: $("admin-invite-email").value.trim(), role: "" });
      $("admin-invite-email").value = "";
      await adminTenants();
    } catch (err) {
      adminSay(err.message);
    }
  });
});

$("invitation-accept").addEventListener("click", () => {
  say("");
  busy($("invitation"), acceptInvitation);
});

$("forgot-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.currentTarget;
  clearErrors(form);
  say("");
  // The link opens in the mode of the page that asked for it, even if
  // another tab used the other mode since this one loaded.
  rememberMode();
  busy(form, async () => {
    const res = await EmailPassword.sendPasswordResetEmail({
      formFields: [{ id: "email", value: $("forgot-email").value }],
    });
    if (res.status === "OK") say("If that email has an account, a reset link is on its way.");
    else if (res.status === "FIELD_ERROR") fieldErrors(res.formFields, { email: "forgot-email" });
    else say("Password reset is not allowed for this account.");
  });
});

$("reset-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.currentTarget;
  clearErrors(form);
  say("");
  busy(form, async () => {
    // The SDK reads token and tenantId from the page's URL.
    const res = await EmailPassword.submitNewPassword({
      formFields: [{ id: "password", value: $("new-password").value }],
    });
    if (res.status === "OK") {
      $("new-password").value = "";
      say("Your password is changed. Sign in with the new one.");
    } else if (res.status === "FIELD_ERROR") {
      fieldErrors(res.formFields, { password: "new-password" });
    } else {
      say("This link has expired or was used already. Ask for a new one.");
    }
  });
});

$("pwl-start-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const form = e.currentTarget;
  const email = $("pwl-email").value.trim();
  say("");
  pwlError("");
  $("pwl-email").removeAttribute("aria-invalid");
  // A link opens in the mode of the page that asked for it.
  rememberMode();
  busy(
    form,
    async () => {
      const res = await Passwordless.createCode({ email });
      if (res.status !== "OK") {
        pwlError("Not allowed: " + (res.reason || res.status) + ".");
        return;
      }
      // The SDK keeps the attempt (deviceId, preAuthSessionId); the page
      // adds the address, to show it again after a reload.
      const info = await Passwordless.getLoginAttemptInfo();
      await Passwordless.setLoginAttemptInfo({ attemptInfo: { ...info, email } });
      pwlAwaitCode(email);
      say(`A sign-in ${sent()} is on its way to ${email}.`);
    },
    (text) => {
      // A GENERAL_ERROR: an address the server refuses, or too many
      // emails to it.
      pwlError(text);
      $("pwl-email").setAttribute("aria-invalid", "true");
    },
  );
});

$("pwl-code-form").addEventListener("submit", (e) => {
  e.preventDefault();
  if (!passwordless.codes) return;
  const form = e.currentTarget;
  const code = $("pwl-code").value.trim();
  say("");
  pwlError("");
  if (code === "") {
    pwlError("Enter the code from the email.");
    $("pwl-code").setAttribute("aria-invalid", "true");
    return;
  }
  $("pwl-code").removeAttribute("aria-invalid");
  busy(form, async () => pwlCodeAnswer(await Passwordless.consumeCode({ userInputCode: code })), pwlError);
});

$("pwl-resend").addEventListener("click", () => {
  say("");
  pwlError("");
  busy(
    $("pwl-code-form"),
    async () => {
      const res = await Passwordless.resendCode();
      if (res.status === "OK") {
        $("pwl-code").value = "";
        $("pwl-code").removeAttribute("aria-invalid");
        say(`A new sign-in ${sent()} is on its way to ${pwlEmail}.`);
        return;
      }
      await Passwordless.clearLoginAttemptInfo();
      pwlStart(passwordless.codes ? PWL_RESTART : PWL_RESTART_LINK);
    },
    pwlError,
  );
});

$("pwl-restart").addEventListener("click", () => {
  say("");
  busy(
    $("pwl-code-form"),
    async () => {
      await Passwordless.clearLoginAttemptInfo();
      pwlStart();
      $("pwl-email").focus();
    },
    pwlError,
  );
});

$("pk-signin").addEventListener("click", () => {
  say("");
  pkError("");
  busy(
    $("passkeys"),
    async () => {
      const res = await Webauthn.authenticateCredentialWithSignIn();
      if (res.status !== "OK") {
        pkError(pkRefused(res));
        return;
      }
      say("Signed in.");
      await showMe();
    },
    pkError,
  );
});

$("pk-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const recover = e.submitter && e.submitter.value === "recover";
  const email = $("pk-email").value.trim();
  say("");
  pkError("");
  if (email === "") {
    pkError("Enter your email.");
    $("pk-email").setAttribute("aria-invalid", "true");
    return;
  }
  $("pk-email").removeAttribute("aria-invalid");
  // A recovery link opens in the mode of the page that asked for it.
  rememberMode();
  busy(
    $("passkeys"),
    async () => {
      if (recover) {
        const res = await Webauthn.generateRecoverAccountToken({ email });
        if (res.status === "OK") say("If that email has a passkey account, a recovery link is on its way to " + email + ".");
        else pkError(pkRefused(res));
        return;
      }
      const res = await Webauthn.registerCredentialWithSignUp({ email });
      if (res.status !== "OK") {
        pkError(pkRefused(res));
        return;
      }
      $("pk-email").value = "";
      say("Account created.");
      await showMe();
    },
    pkError,
  );
});

$("pk-recovery-continue").addEventListener("click", () => {
  busy($("pk-recovery"), recoverWithPasskey, (text) => ($("pk-recovery-error").textContent = text));
});

$("pwl-link-continue").addEventListener("click", () => {
  busy($("pwl-link"), () => finishLinkSignIn().catch(linkFailure));
});

// A link opened in another tab of this browser signed it in: the SDK
// here sees the session once the user comes back to this tab.
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState !== "visible" || $("signed-out").hidden || $("pwl-code-form").hidden) return;
  (async () => {
    if (!(await Session.doesSessionExist())) return;
    pwlStart();
    say("Signed in.");
    await showMe();
  })().catch((err) => console.warn("passwordless:", err));
});

// ---- the admin page (operators.go) ----

// adminCall sends a request to the admin page's API; the SDK's
// interceptor adds the session, and takes the tokens of an answer that
// carries new ones (acting as a user, and stopping). It returns the
// answer's JSON, or throws the message the server gave.
async function adminCall(method, path, body) {
  const init = { method, credentials: "include", headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(api + path, init);
  let data = {};
  try {
    data = await res.json();
  } catch (_) {}
  if (res.status === 401) {
    signedOut(res);
    throw new Error("signed out");
  }
  if (!res.ok) throw new Error(data.message || "the server answered " + res.status);
  return data;
}

let adminNext = "";
let adminUserID = "";

function adminSay(text) {
  $("admin-error").textContent = text;
}

// showAdmin shows the admin page: the newest users, and the audit log.
async function showAdmin() {
  show("admin");
  const res = await fetch(api + "/api/admin/users", { credentials: "include" });
  if (res.status === 401) {
    signedOut(res);
    return;
  }
  if (res.status === 403) {
    adminSay("This page is for admins: your account has no role admin.");
    $("admin-search").hidden = true;
    return;
  }
  await adminUsers(false);
  await adminTenants();
  await adminAudit("");
}

// adminTenants lists the tenants (-tenants) with their members and the
// invitations not yet accepted.
async function adminTenants() {
  $("admin-tenants-box").hidden = features.tenants !== true;
  if (!features.tenants) return;
  const tenants = await adminCall("GET", "/api/admin/tenants");
  const list = $("admin-tenants");
  list.replaceChildren();
  for (const t of tenants) {
    const li = document.createElement("li");
    const members = t.members.map((m) => m.email + (m.roles.length ? " (" + m.roles.join(", ") + ")" : ""));
    const invited = t.invitations.map((i) => i.email);
    li.textContent =
      t.id +
      ": " +
      (members.length ? members.join(", ") : "no members") +
      (invited.length ? "; invited: " + invited.join(", ") : "");
    list.append(li);
  }
}

// adminUsers lists the users matching the search, newest first, or the
// next page of them with more.
async function adminUsers(more) {
  const q = new URLSearchParams({ email: $("admin-email").value.trim() });
  if (more) q.set("after", adminNext);
  const page = await adminCall("GET", "/api/admin/users?" + q);
  const list = $("admin-users");
  if (!more) list.replaceChildren();
  for (const u of page.users) {
    const details = [["Joined ", when(Date.parse(u.timeJoined))], "Signs in with " + (u.methods.join(", ") || "nothing")];
    const title = [u.email || u.id];
    if (u.banned) title.push(" ", badge("banned", true));
    list.append(item(title, details, [button("Open", "Open " + (u.email || u.id), () => adminOpen(u.id).catch((e) => adminSay(failure(e))))]));
  }
  if (!more && page.users.length === 0) list.append(none());
  adminNext = page.next || "";
  $("admin-more").hidden = adminNext === "";
}

// adminOpen shows one user, and their part of the audit log.
async function adminOpen(id) {
  adminUserID = id;
  const u = await adminCall("GET", "/api/admin/users/" + encodeURIComponent(id));
  $("admin-user").hidden = false;
  $("admin-user-title").textContent = u.Email || u.ID;
  const methods = (u.LoginMethods || []).map((m) => m.Method).join(", ");
  $("admin-user-detail").textContent = `Id ${u.ID} · signs in with ${methods || "nothing"} · ${u.sessions} live session${u.sessions === 1 ? "" : "s"}`;
  const b = u.banned;
  $("admin-user-ban").textContent = b
    ? `Banned ${b.until ? "until " + new Date(b.until).toLocaleString() : "until lifted"}${b.reason ? ": " + b.reason : ""}.`
    : "Not banned.";
  $("admin-unban").hidden = !b;
  $("admin-ban").hidden = !!b;
  const roles = $("admin-roles");
  roles.replaceChildren();
  for (const r of u.roles) roles.append(item(r, [], [button("Remove", "Remove the role " + r, () => adminAct("POST", `/roles/${encodeURIComponent(r)}/remove`))]));
  if (u.roles.length === 0) roles.append(none());
  $("admin-user-title").focus();
  await adminAudit(id);
}

// adminAct changes the open user, then shows them again.
async function adminAct(method, path, body) {
  try {
    adminSay("");
    await adminCall(method, "/api/admin/users/" + encodeURIComponent(adminUserID) + path, body);
    await adminOpen(adminUserID);
    await adminUsers(false);
  } catch (e) {
    adminSay(failure(e));
  }
}

// adminAudit lists the audit log, the user's or all of it.
async function adminAudit(userID) {
  const q = new URLSearchParams();
  if (userID) q.set("user", userID);
  const page = await adminCall("GET", "/api/admin/audit?" + q);
  $("admin-audit-note").textContent = userID ? "This user's, newest first." : "Everything, newest first.";
  const list = $("admin-audit");
  list.replaceChildren();
  for (const e of page.Entries) {
    const who = e.Actor && e.Actor !== e.UserID ? `by ${e.Actor}` : "";
    const what = [e.Method, e.ThirdPartyID, e.Reason].filter(Boolean).join(" · ");
    list.append(item(e.Kind, [[when(Date.parse(e.Time)), " ", e.UserID ? "user " + e.UserID : "no user"], who, what]));
  }
  if (page.Entries.length === 0) list.append(none());
}

// showActing says so when an operator is acting as the session's user.
function showActing(me) {
  $("acting").hidden = !me.operator;
  if (!me.operator) return;
  $("acting-who").textContent = me.email;
  $("acting-operator").textContent = me.operator;
}

$("admin-search").addEventListener("submit", (e) => {
  e.preventDefault();
  adminSay("");
  busy(e.currentTarget, () => adminUsers(false), adminSay);
});

$("admin-more").addEventListener("click", () => busy($("admin"), () => adminUsers(true), adminSay));

$("admin-ban-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const minutes = Number($("admin-ban-minutes").value || 0);
  busy(e.currentTarget, () => adminAct("POST", "/ban", { reason: $("admin-ban-reason").value.trim(), minutes }), adminSay);
});

$("admin-unban").addEventListener("click", () => busy($("admin-ban-form"), () => adminAct("POST", "/unban"), adminSay));

$("admin-role-form").addEventListener("submit", (e) => {
  e.preventDefault();
  busy(e.currentTarget, () => adminAct("POST", "/roles", { role: $("admin-role").value.trim() }), adminSay);
});

// Acting as the user: the answer's tokens replace the admin's in this
// browser, and the main page shows the user, and who is acting.
$("admin-impersonate").addEventListener("click", () =>
  busy(
    $("admin-ban-form"),
    async () => {
      await adminCall("POST", "/api/admin/users/" + encodeURIComponent(adminUserID) + "/impersonate");
      window.location.assign(homeURL());
    },
    adminSay,
  ),
);

// Stopping gives the admin's own session back, when it is still live.
$("acting-stop").addEventListener("click", () =>
  busy($("acting"), async () => {
    const res = await adminCall("POST", "/api/impersonation/stop");
    window.location.assign(res.restored ? adminURL() : homeURL());
  }),
);

start().catch((err) => {
  show("signed-out");
  say(failure(err));
});
