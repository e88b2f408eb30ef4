// A second app on the prebuilt UI of supertokens-auth-react, for
// multi-factor auth: sign-up and sign-in with EmailPassword, then the
// second factors of the MultiFactorAuth recipe, TOTP (an authenticator
// app) and WebAuthn (a passkey), under /auth; a protected home page at /
// that shows what the demo's GET /api/me answers. As in app.jsx, there is
// no router: auth-react's canHandleRoute and getRoutingComponent pick the
// page, and its redirects are full page loads.
//
// The page reads its settings from window.APP_CONFIG (server.mjs):
//   apiDomain   the demo's origin; with passkeys http://localhost:PORT
//   mode        "cookie" (the default) or "header": the token transfer method
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import SuperTokens, { SuperTokensWrapper } from "supertokens-auth-react";
import EmailPassword from "supertokens-auth-react/recipe/emailpassword";
import { EmailPasswordPreBuiltUI } from "supertokens-auth-react/recipe/emailpassword/prebuiltui";
import MultiFactorAuth from "supertokens-auth-react/recipe/multifactorauth";
import { MultiFactorAuthPreBuiltUI } from "supertokens-auth-react/recipe/multifactorauth/prebuiltui";
import TOTP from "supertokens-auth-react/recipe/totp";
import { TOTPPreBuiltUI } from "supertokens-auth-react/recipe/totp/prebuiltui";
import Webauthn from "supertokens-auth-react/recipe/webauthn";
import { WebauthnPreBuiltUI } from "supertokens-auth-react/recipe/webauthn/prebuiltui";
import Session, { SessionAuth, signOut, useSessionContext } from "supertokens-auth-react/recipe/session";
import { canHandleRoute, getRoutingComponent } from "supertokens-auth-react/ui";

const config = window.APP_CONFIG || {};
const EVENTS = "authreact-events";
const CALLS = "authreact-calls";

// record keeps the SDK's events in localStorage, where they outlive the
// full page loads of the SDK's redirects, for the tests to read.
function record(recipe, event) {
  const events = JSON.parse(localStorage.getItem(EVENTS) || "[]");
  events.push({
    recipe,
    action: event.action,
    isNewRecipeUser: event.isNewRecipeUser,
    createdNewSession: event.createdNewSession,
    userId: event.user?.id ?? event.userId,
    loginMethods: event.user?.loginMethods?.map((m) => m.recipeId),
  });
  localStorage.setItem(EVENTS, JSON.stringify(events));
}

// recordCall keeps each call a recipe makes, request and answer, as the
// SDK sees them (its postAPIHook): the page's own record of the wire,
// which outlives the full page load that often follows a call.
async function recordCall(recipe, context) {
  let body = null;
  try {
    body = await context.fetchResponse.json();
  } catch {}
  let request = null;
  try {
    request = context.requestInit.body ? JSON.parse(context.requestInit.body) : null;
  } catch {
    request = String(context.requestInit.body);
  }
  const calls = JSON.parse(localStorage.getItem(CALLS) || "[]");
  calls.push({
    recipe,
    action: context.action,
    method: context.requestInit.method || "GET",
    path: new URL(context.url).pathname,
    request,
    status: context.fetchResponse.status,
    body,
  });
  localStorage.setItem(CALLS, JSON.stringify(calls));
}

const hooks = (recipe) => ({
  onHandleEvent: (event) => record(recipe, event),
  postAPIHook: (context) => recordCall(recipe, context),
});

const mode = config.mode === "header" ? "header" : "cookie";
const apiDomain = config.apiDomain || window.location.origin;

SuperTokens.init({
  appInfo: {
    appName: "latchkit e2e",
    apiDomain,
    websiteDomain: window.location.origin,
    apiBasePath: "/auth",
    websiteBasePath: "/auth",
  },
  recipeList: [
    EmailPassword.init(hooks("emailpassword")),
    // Only the password signs in; the others are second factors.
    MultiFactorAuth.init({ firstFactors: ["emailpassword"], ...hooks("multifactorauth") }),
    TOTP.init(hooks("totp")),
    Webauthn.init(hooks("webauthn")),
    Session.init({
      ...(mode === "header" ? { tokenTransferMethod: "header" } : {}),
      onHandleEvent: (event) => record("session", event),
    }),
  ],
});

// For the tests: the events and calls so far, the access token payload,
// and whether the SDK sees a session.
window.authReactApp = {
  events: () => JSON.parse(localStorage.getItem(EVENTS) || "[]"),
  calls: () => JSON.parse(localStorage.getItem(CALLS) || "[]"),
  accessTokenPayload: () => Session.getAccessTokenPayloadSecurely(),
  doesSessionExist: () => Session.doesSessionExist(),
};

const prebuiltUIs = [EmailPasswordPreBuiltUI, MultiFactorAuthPreBuiltUI, TOTPPreBuiltUI, WebauthnPreBuiltUI];

// Me shows who /api/me says is signed in.
function Me() {
  const session = useSessionContext();
  const [me, setMe] = useState({ state: "loading" });
  useEffect(() => {
    if (session.loading) return;
    let live = true;
    (async () => {
      try {
        const res = await fetch(apiDomain + "/api/me", { credentials: "include" });
        const text = await res.text();
        if (!live) return;
        if (!res.ok) {
          setMe({ state: "error", text: `${res.status} ${text}` });
          return;
        }
        setMe({ state: "ok", body: JSON.parse(text) });
      } catch (err) {
        if (live) setMe({ state: "error", text: String(err) });
      }
    })();
    return () => {
      live = false;
    };
  }, [session.loading]);

  return (
    <main id="home">
      <h1>Signed in</h1>
      <p id="mode">Token transfer: {mode}</p>
      {session.loading ? null : <p id="session-user-id">{session.userId}</p>}
      {me.state === "loading" && <p id="me-loading">Asking /api/me…</p>}
      {me.state === "error" && <p id="me-error">{me.text}</p>}
      {me.state === "ok" && (
        <dl id="me">
          <dt>Email</dt>
          <dd id="me-email">{me.body.email}</dd>
          <dt>User id</dt>
          <dd id="me-user-id">{me.body.userId}</dd>
        </dl>
      )}
      <button
        id="sign-out"
        onClick={async () => {
          await signOut();
          window.location.assign("/auth");
        }}
      >
        Sign out
      </button>
    </main>
  );
}

function App() {
  if (canHandleRoute(prebuiltUIs)) {
    return getRoutingComponent(prebuiltUIs);
  }
  // SessionAuth checks the session's claims, st-mfa among them: a
  // session that has not completed its second factor is sent to it.
  return (
    <SessionAuth>
      <Me />
    </SessionAuth>
  );
}

createRoot(document.getElementById("root")).render(
  <SuperTokensWrapper>
    <App />
  </SuperTokensWrapper>,
);
