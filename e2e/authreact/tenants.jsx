// An app on the prebuilt UI of supertokens-auth-react for tenants: the
// sign-in page shows what GET /auth/<tenantId>/loginmethods answers for
// the tenant of the page's ?tenantId= (auth-react's default; none is the
// public tenant), with every recipe the demo's tenants may name: a
// password, third-party providers, passwordless by email and passkeys as
// first factors, TOTP (and passkeys) as second factors. A protected home
// page at / shows what the demo's GET /api/me answers, the tenant
// included. As in app.jsx, there is no router: auth-react's
// canHandleRoute and getRoutingComponent pick the page, and its redirects
// are full page loads.
//
// The page reads its settings from window.APP_CONFIG (server.mjs):
//   apiDomain   the demo's origin, named localhost (passkeys refuse IPs)
//   mode        "cookie" (the default) or "header": the token transfer method
//
// The tenants' providers need no entry here: with usesDynamicLoginMethods
// auth-react makes a button for each provider /loginmethods lists, named
// as it says (thirdparty-shared.js mergeProviders, Custom.init).
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import SuperTokens, { SuperTokensWrapper } from "supertokens-auth-react";
import EmailPassword from "supertokens-auth-react/recipe/emailpassword";
import { EmailPasswordPreBuiltUI } from "supertokens-auth-react/recipe/emailpassword/prebuiltui";
import ThirdParty from "supertokens-auth-react/recipe/thirdparty";
import { ThirdPartyPreBuiltUI } from "supertokens-auth-react/recipe/thirdparty/prebuiltui";
import Passwordless from "supertokens-auth-react/recipe/passwordless";
import { PasswordlessPreBuiltUI } from "supertokens-auth-react/recipe/passwordless/prebuiltui";
import Webauthn from "supertokens-auth-react/recipe/webauthn";
import { WebauthnPreBuiltUI } from "supertokens-auth-react/recipe/webauthn/prebuiltui";
import MultiFactorAuth from "supertokens-auth-react/recipe/multifactorauth";
import { MultiFactorAuthPreBuiltUI } from "supertokens-auth-react/recipe/multifactorauth/prebuiltui";
import TOTP from "supertokens-auth-react/recipe/totp";
import { TOTPPreBuiltUI } from "supertokens-auth-react/recipe/totp/prebuiltui";
import Multitenancy from "supertokens-auth-react/recipe/multitenancy";
import Session, { SessionAuth, signOut, useSessionContext } from "supertokens-auth-react/recipe/session";
import { canHandleRoute, getRoutingComponent } from "supertokens-auth-react/ui";

const config = window.APP_CONFIG || {};
const CALLS = "authreact-calls";

// recordCall keeps each call a recipe makes, request and answer, as the
// SDK sees them (its postAPIHook), in localStorage: the page's own record
// of the wire, which outlives the full page loads of the SDK's redirects.
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

const hooks = (recipe) => ({ postAPIHook: (context) => recordCall(recipe, context) });

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
  // The sign-in page asks the tenant which methods it offers.
  usesDynamicLoginMethods: true,
  recipeList: [
    Multitenancy.init(hooks("multitenancy")),
    EmailPassword.init(hooks("emailpassword")),
    ThirdParty.init({ signInAndUpFeature: { providers: [] }, ...hooks("thirdparty") }),
    Passwordless.init({ contactMethod: "EMAIL", ...hooks("passwordless") }),
    Webauthn.init(hooks("webauthn")),
    // No firstFactors: each tenant's come from /loginmethods.
    MultiFactorAuth.init(hooks("multifactorauth")),
    TOTP.init(hooks("totp")),
    Session.init(mode === "header" ? { tokenTransferMethod: "header" } : {}),
  ],
});

// For the tests: the calls so far, the access token payload, and whether
// the SDK sees a session.
window.authReactApp = {
  calls: () => JSON.parse(localStorage.getItem(CALLS) || "[]"),
  accessTokenPayload: () => Session.getAccessTokenPayloadSecurely(),
  doesSessionExist: () => Session.doesSessionExist(),
};

const prebuiltUIs = [
  EmailPasswordPreBuiltUI,
  ThirdPartyPreBuiltUI,
  PasswordlessPreBuiltUI,
  WebauthnPreBuiltUI,
  MultiFactorAuthPreBuiltUI,
  TOTPPreBuiltUI,
];

// Me shows who /api/me says is signed in, and in which tenant.
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
          <dt>Tenant</dt>
          <dd id="me-tenant">{me.body.tenantId}</dd>
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
  // session that has not completed what its tenant requires is sent to
  // the second factor.
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
