// The demo's front end: sign up, sign in, "signed in as", sign out and
// password reset, with supertokens-web-js against the Go auth library.
//
// ?mode=header uses header tokens instead of cookies, and the reset page
// keeps the mode the page was used in (pageMode).
// <meta name="api-domain" content="..."> (or <html data-api-domain="...">)
// points the page at an API on another origin. Not a query parameter: a
// crafted link must not send what the user types to another server.
import SuperTokens from "supertokens-web-js";
import Session from "supertokens-web-js/recipe/session";
import EmailPassword from "supertokens-web-js/recipe/emailpassword";

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

// pageMode is the token transfer mode: ?mode=header or ?mode=cookie if the
// URL says; else cookie on the sign-in page, and on the reset page the mode
// the sign-in page was last used in. The emailed link cannot carry ?mode
// (its format is the SDKs'), so the sign-in page remembers its mode in this
// browser; the reset page only reads it.
const MODE_KEY = "latchkit-auth-demo.mode";
const isMode = (m) => m === "cookie" || m === "header";

function pageMode() {
  const asked = params.get("mode");
  if (isMode(asked)) return asked;
  if (onResetPage) {
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
  if (onResetPage) return;
  try {
    window.localStorage.setItem(MODE_KEY, mode);
  } catch (_) {
    // storage disabled: reset pages open in cookie mode
  }
}

const api = apiDomain();
const mode = pageMode();
rememberMode();

SuperTokens.init({
  appInfo: { appName: "auth demo", apiDomain: api, apiBasePath: "/auth" },
  recipeList: [Session.init({ tokenTransferMethod: mode }), EmailPassword.init()],
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
