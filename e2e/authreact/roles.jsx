// A third app on the prebuilt UI of supertokens-auth-react, for roles:
// sign-up and sign-in with EmailPassword under /auth, and a home page at /
// for the role admin only: SessionAuth checks UserRoleClaim's validator
// includes("admin") on the access token and shows auth-react's prebuilt
// access-denied screen to a session without the role. Inside, the page
// shows what the demo's GET /api/me and GET /api/admin answer. As in
// app.jsx, there is no router: auth-react's canHandleRoute and
// getRoutingComponent pick the page, and its redirects are full page
// loads.
//
// The page reads its settings from window.APP_CONFIG (server.mjs):
//   apiDomain   the demo's origin, as in http://127.0.0.1:8080
//   mode        "cookie" (the default) or "header": the token transfer method
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import SuperTokens, { SuperTokensWrapper } from "supertokens-auth-react";
import EmailPassword from "supertokens-auth-react/recipe/emailpassword";
import { EmailPasswordPreBuiltUI } from "supertokens-auth-react/recipe/emailpassword/prebuiltui";
import Session, { SessionAuth, signOut, useSessionContext } from "supertokens-auth-react/recipe/session";
import { AccessDeniedScreen } from "supertokens-auth-react/recipe/session/prebuiltui";
// The claims of supertokens-web-js (recipe/userroles), which auth-react
// re-exports; they need no init.
import { PermissionClaim, UserRoleClaim } from "supertokens-auth-react/recipe/userroles";
import { canHandleRoute, getRoutingComponent } from "supertokens-auth-react/ui";

const config = window.APP_CONFIG || {};
const EVENTS = "authreact-events";

// record keeps the SDK's events in localStorage, where they outlive the
// full page loads of the SDK's redirects, for the tests to read; with an
// API_INVALID_CLAIM event, the failures the SDK read from the 403.
function record(recipe, event) {
  const events = JSON.parse(localStorage.getItem(EVENTS) || "[]");
  events.push({
    recipe,
    action: event.action,
    userId: event.user?.id ?? event.userId,
    claimValidationErrors: event.claimValidationErrors,
  });
  localStorage.setItem(EVENTS, JSON.stringify(events));
}

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
    EmailPassword.init({ onHandleEvent: (event) => record("emailpassword", event) }),
    Session.init({
      ...(mode === "header" ? { tokenTransferMethod: "header" } : {}),
      onHandleEvent: (event) => record("session", event),
    }),
  ],
});

// get calls the demo through the SDK's fetch interceptor and returns the
// status and the body, parsed.
async function get(p) {
  const res = await fetch(apiDomain + p, { credentials: "include" });
  const text = await res.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

// For the tests: the events so far, the access token payload, web-js's
// validators of a role and of a permission run by Session.validateClaims
// (the failures, [] when they pass), the demo's GET /api/admin through
// the SDK, and whether the SDK sees a session.
window.authReactApp = {
  events: () => JSON.parse(localStorage.getItem(EVENTS) || "[]"),
  accessTokenPayload: () => Session.getAccessTokenPayloadSecurely(),
  validateRole: (role) =>
    Session.validateClaims({ overrideGlobalClaimValidators: () => [UserRoleClaim.validators.includes(role)] }),
  validatePermission: (permission) =>
    Session.validateClaims({ overrideGlobalClaimValidators: () => [PermissionClaim.validators.includes(permission)] }),
  admin: () => get("/api/admin"),
  doesSessionExist: () => Session.doesSessionExist(),
};

const prebuiltUIs = [EmailPasswordPreBuiltUI];

// Admin shows what /api/me and /api/admin answer the session.
function Admin() {
  const session = useSessionContext();
  const [answers, setAnswers] = useState(null);
  useEffect(() => {
    if (session.loading) return;
    let live = true;
    (async () => {
      const [me, admin] = await Promise.all([get("/api/me"), get("/api/admin")]);
      if (live) setAnswers({ me, admin });
    })().catch((err) => live && setAnswers({ error: String(err) }));
    return () => {
      live = false;
    };
  }, [session.loading]);

  return (
    <main id="admin">
      <h1>Admins only</h1>
      {session.loading ? null : <p id="session-user-id">{session.userId}</p>}
      {answers === null && <p id="loading">Asking the demo…</p>}
      {answers?.error && <p id="error">{answers.error}</p>}
      {answers?.me && (
        <dl>
          <dt>Email</dt>
          <dd id="me-email">{answers.me.body.email}</dd>
          <dt>Roles</dt>
          <dd id="me-roles">{JSON.stringify(answers.me.body.roles)}</dd>
          <dt>Permissions</dt>
          <dd id="me-permissions">{JSON.stringify(answers.me.body.permissions)}</dd>
          <dt>GET /api/admin</dt>
          <dd id="admin-answer">{`${answers.admin.status} ${JSON.stringify(answers.admin.body)}`}</dd>
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
    <SessionAuth
      accessDeniedScreen={AccessDeniedScreen}
      overrideGlobalClaimValidators={(globals) => [...globals, UserRoleClaim.validators.includes("admin")]}
    >
      <Admin />
    </SessionAuth>
  );
}

createRoot(document.getElementById("root")).render(
  <SuperTokensWrapper>
    <App />
  </SuperTokensWrapper>,
);
