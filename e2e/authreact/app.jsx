// A small app on the prebuilt UI of supertokens-auth-react: the sign-in
// pages of one recipe, Passwordless or WebAuthn (passkeys), under /auth
// and a protected home page at / that shows what the demo's GET /api/me
// answers. There is no router:
// auth-react's canHandleRoute and getRoutingComponent pick the page, and
// its redirects are full page loads.
//
// The page reads its settings from window.APP_CONFIG, which the server
// (server.mjs) writes into index.html:
//   apiDomain   the demo's origin, as in http://127.0.0.1:8080
//   mode        "cookie" (the default) or "header": the token transfer method
//   resendGap   seconds before the code screen offers to resend (default 15)
//   recipe      "passwordless" (the default) or "webauthn": the recipe whose
//               prebuilt UI the app runs
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import SuperTokens, { SuperTokensWrapper } from "supertokens-auth-react";
import Passwordless from "supertokens-auth-react/recipe/passwordless";
import { PasswordlessPreBuiltUI } from "supertokens-auth-react/recipe/passwordless/prebuiltui";
import Webauthn from "supertokens-auth-react/recipe/webauthn";
import { WebauthnPreBuiltUI } from "supertokens-auth-react/recipe/webauthn/prebuiltui";
import Session, { SessionAuth, signOut, useSessionContext } from "supertokens-auth-react/recipe/session";
import { canHandleRoute, getRoutingComponent } from "supertokens-auth-react/ui";

const config = window.APP_CONFIG || {};
const EVENTS = "authreact-events";
const ANSWERS = "authreact-answers";

// record keeps the SDK's events in localStorage, where they outlive the
// full page loads of the SDK's redirects, for the tests to read.
function record(recipe, event) {
  const events = JSON.parse(localStorage.getItem(EVENTS) || "[]");
  events.push({
    recipe,
    action: event.action,
    isResend: event.isResend,
    isNewRecipeUser: event.isNewRecipeUser,
    createdNewSession: event.createdNewSession,
    userId: event.user?.id ?? event.userId,
    loginMethods: event.user?.loginMethods?.map((m) => m.recipeId),
  });
  localStorage.setItem(EVENTS, JSON.stringify(events));
}
// recordAnswer keeps the demo's answers to the recipe's calls, read in
// the SDK's postAPIHook, in localStorage with the events: the page's own
// record of them survives the full page load that follows a sign-in,
// which the browser's network log does not.
async function recordAnswer(recipe, context) {
  let body = null;
  try {
    body = await context.fetchResponse.json();
  } catch {}
  const answers = JSON.parse(localStorage.getItem(ANSWERS) || "[]");
  answers.push({ recipe, action: context.action, path: new URL(context.url).pathname, body });
  localStorage.setItem(ANSWERS, JSON.stringify(answers));
}

const mode = config.mode === "header" ? "header" : "cookie";
const apiDomain = config.apiDomain || window.location.origin;
const recipe = config.recipe === "webauthn" ? "webauthn" : "passwordless";

const recipes = {
  passwordless: {
    init: () =>
      Passwordless.init({
        contactMethod: "EMAIL",
        signInUpFeature: config.resendGap ? { resendEmailOrSMSGapInSeconds: config.resendGap } : undefined,
        onHandleEvent: (event) => record("passwordless", event),
      }),
    ui: PasswordlessPreBuiltUI,
  },
  webauthn: {
    init: () =>
      Webauthn.init({
        onHandleEvent: (event) => record("webauthn", event),
        postAPIHook: (context) => recordAnswer("webauthn", context),
      }),
    ui: WebauthnPreBuiltUI,
  },
};

SuperTokens.init({
  appInfo: {
    appName: "latchkit e2e",
    apiDomain,
    websiteDomain: window.location.origin,
    apiBasePath: "/auth",
    websiteBasePath: "/auth",
  },
  recipeList: [
    recipes[recipe].init(),
    Session.init({
      ...(mode === "header" ? { tokenTransferMethod: "header" } : {}),
      onHandleEvent: (event) => record("session", event),
    }),
  ],
});

// For the tests: the events so far, the answers recorded (WebAuthn), the
// access token payload, and whether the SDK sees a session.
window.authReactApp = {
  events: () => JSON.parse(localStorage.getItem(EVENTS) || "[]"),
  answers: () => JSON.parse(localStorage.getItem(ANSWERS) || "[]"),
  accessTokenPayload: () => Session.getAccessTokenPayloadSecurely(),
  doesSessionExist: () => Session.doesSessionExist(),
};

const prebuiltUIs = [recipes[recipe].ui];

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
