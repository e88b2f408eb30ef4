// The demo's front end: sign up, sign in, "signed in as", sign out and
// password reset, with supertokens-web-js against the Go auth library;
// and sign-in with the third-party providers the server lists
// (GET /auth/loginmethods), finished on the callback page the provider
// sends the browser back to, /auth/callback/<thirdPartyId>: this page too.
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
  if (onResetPage || onCallbackPage) {
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
  if (onResetPage || onCallbackPage) return;
  try {
    window.localStorage.setItem(MODE_KEY, mode);
  } catch (_) {
    // storage disabled: reset and callback pages open in cookie mode
  }
}

const api = apiDomain();
const mode = pageMode();
rememberMode();

SuperTokens.init({
  appInfo: { appName: "auth demo", apiDomain: api, apiBasePath: "/auth" },
  recipeList: [
    Session.init({ tokenTransferMethod: mode }),
    EmailPassword.init(),
    ThirdParty.init(),
    Multitenancy.init(),
  ],
});

// Links back to the sign-in page keep the mode, remembered or not.
function homeURL() {
  return mode === "header" ? "/?mode=header" : "/";
}

function say(text) {
  $("status").textContent = text;
}

function show(id) {
  for (const s of ["loading", "signed-in", "signed-out", "reset"]) $(s).hidden = s !== id;
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
  return "Something went wrong: " + ((err && err.message) || err) + ".";
}

// busy disables a form's buttons while a request runs.
async function busy(form, fn) {
  const buttons = form.querySelectorAll("button");
  buttons.forEach((b) => (b.disabled = true));
  try {
    await fn();
  } catch (err) {
    say(failure(err));
  } finally {
    buttons.forEach((b) => (b.disabled = false));
  }
}

async function showMe() {
  // Plain fetch: the SDK's interceptor adds the session (and refreshes it).
  const res = await fetch(api + "/api/me", { credentials: "include" });
  if (res.status === 401) {
    show("signed-out");
    return;
  }
  if (!res.ok) throw new Error("GET /api/me answered " + res.status);
  const me = await res.json();
  $("me-email").textContent = me.email;
  show("signed-in");
}

// ---- third-party sign-in ----

// The provider's name is kept for the callback page, which says "Signed in
// with <name>"; the SDK keeps only the id.
const PROVIDER_KEY = "latchkit-auth-demo.provider";

// showProviders adds a "Sign in with <name>" button per provider the
// server lists; none, and the page is as without third-party sign-in.
async function showProviders() {
  const res = await Multitenancy.getLoginMethods();
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
}

function signInWith(id, name) {
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

async function start() {
  if (api !== window.location.origin) {
    $("api").textContent = "API: " + api;
    $("api").hidden = false;
  }
  $("mode").textContent = "Token transfer: " + mode;
  $("mode").hidden = false;
  $("home").href = homeURL();

  if (onResetPage) {
    show("reset");
    if (!params.get("token")) say("This reset link has no token. Ask for a new one.");
    return;
  }
  // The buttons are for the signed-out view; a server that cannot list
  // providers leaves the page as it was without them.
  const providers = showProviders().catch((err) => console.warn("login methods:", err));
  if (onCallbackPage) {
    try {
      await finishSignIn();
    } catch (err) {
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

start().catch((err) => {
  show("signed-out");
  say(failure(err));
});
