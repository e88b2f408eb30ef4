// End-to-end tests of tenants, in Chromium, against the demo run with
// -dev -tenants: beside the public tenant, acme, whose people sign in
// only with acme's own development provider ("Acme SSO", /dev/acme-oidc)
// and must complete TOTP.
//
// The prebuilt UI of supertokens-auth-react (e2e/authreact/tenants.jsx,
// usesDynamicLoginMethods) shows each tenant's methods as GET
// /auth/<tenantId>/loginmethods lists them: with ?tenantId=acme only the
// Acme SSO button, then the TOTP set-up that acme requires; without it the
// public tenant's password form and development provider. And an
// invitation: the admin invites an address to acme; its holder signs in
// to acme with acme's provider on the demo's page (?tenantId=acme), finds
// the link on the outbox page and accepts it, and completes the TOTP acme
// requires; a member of acme whose session signed in to the public tenant
// with a password, not one of acme's first factors, is refused the switch
// to acme.
//
//	cd e2e && npm ci && node --test tenants.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). The app and the demo are both named localhost:
// -dev offers passkeys, which browsers refuse on IP addresses. Screenshots
// of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { TEST_TIMEOUT, freePort, launch, open, session, signedInAs, signedOutUI, startDemo, totp } from "./helpers.mjs";
import { build } from "./authreact/build.mjs";
import { serveApp } from "./authreact/server.mjs";

const PASSWORD = "correct horse 7 battery";

// The English texts of the auth-react translation keys the tests look for
// (lib/build/emailpasswordprebuiltui.js, totpprebuiltui.js,
// thirdpartyprebuiltui.js).
const T = {
  SIGN_UP: "Sign Up", // AUTH_PAGE_HEADER_TITLE_SIGN_UP
  SIGN_IN: "Sign In", // AUTH_PAGE_HEADER_TITLE_SIGN_IN
  PROVIDER: (name) => `Continue with ${name}`, // THIRD_PARTY_PROVIDER_DEFAULT_BTN_START
  TOTP_SETUP_TITLE: "Add a TOTP device", // TOTP_DEVICE_SETUP_HEADER_TITLE
  TOTP_SECRET_LINK: "secret key", // TOTP_SHOW_SECRET_LINK
};

// What the demo's -tenants makes (examples/demo/tenants.go).
const ACME = { id: "acme", provider: "Acme SSO", oidc: "/dev/acme-oidc", domain: "acme.example" };
const DEV_PROVIDER = "Dev provider";

let seq = 0;
const unique = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}`;

assert.equal(totp("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", 59_000), "287082");

// ---- the page -------------------------------------------------------------------

// watch records a page's calls to the demo (request and answer) and its
// console errors, for failure messages.
function watch(page, api) {
  const calls = [];
  const errors = [];
  page.on("requestfinished", async (req) => {
    const u = new URL(req.url());
    if (u.origin !== api || req.method() === "OPTIONS") return;
    const call = { method: req.method(), path: u.pathname + u.search, body: req.postData() ?? "", status: 0, answer: "" };
    calls.push(call);
    const res = await req.response().catch(() => null);
    if (!res) return;
    call.status = res.status();
    call.answer = await res.text().catch(() => "");
  });
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  const log = () => calls.map((c) => `${c.method} ${c.path} ${c.body} -> ${c.status} ${c.answer}`.replace(/\s+/g, " ")).join("\n    ");
  return { calls, errors, log };
}

// watched runs fn and adds the demo calls and console errors of the
// watched page to its error (session() takes the screenshot).
async function watched(w, fn) {
  try {
    return await fn();
  } catch (err) {
    err.message += `\n  calls to the demo:\n    ${w.log()}\n  console errors:\n    ${w.errors.join("\n    ")}`;
    throw err;
  }
}

// ui finds an element of the prebuilt UI (in its shadow root, which
// Playwright's CSS locators pierce) by its data-supertokens names.
const ui = (page, names) =>
  page.locator(
    names
      .split(" ")
      .map((n) => `[data-supertokens~="${n}"]`)
      .join(""),
  );

const providerButton = (page, name) => page.getByRole("button", { name: T.PROVIDER(name), exact: true });

// calls lists the calls the app recorded (tenants.jsx recordCall) to path.
async function calls(page, p) {
  return (await page.evaluate(() => window.authReactApp.calls())).filter((c) => c.path === p);
}

async function payload(page) {
  return page.evaluate(() => window.authReactApp.accessTokenPayload());
}

// signInAtProvider types email on the page of a development provider
// (examples/demo/devprovider.go), which signs in whoever is typed, after
// checking it is the page of origin + oidc, signing in to audience.
async function signInAtProvider(page, origin, oidc, audience, email) {
  await page.waitForURL((u) => u.origin === origin && u.pathname === `${oidc}/authorize`);
  await page.getByRole("heading", { name: `Sign in to ${audience}` }).waitFor({ state: "visible" });
  await page.getByLabel("Email", { exact: true }).fill(email);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

// setUpTOTP waits for auth-react's TOTP set-up screen, reads the secret
// it shows as text and types its code, as a user with an authenticator
// app would; it returns the demo's answer.
async function setUpTOTP(page, app, api) {
  await page.waitForURL((u) => u.origin === app.url && u.pathname === "/auth/mfa/totp");
  await ui(page, "headerTitle").filter({ hasText: T.TOTP_SETUP_TITLE }).waitFor({ state: "visible" });
  await ui(page, "totpDeviceQR").waitFor({ state: "visible" });
  await ui(page, "showTOTPSecretBtn").filter({ hasText: T.TOTP_SECRET_LINK }).click();
  const secret = (await ui(page, "totpSecret").textContent()).trim();
  assert.match(secret, /^[A-Z2-7]{16,}=*$/, "the secret is base32");
  // An answer of 401 (the access token expired) is the SDK's cue to
  // refresh and send the code again: the answer is the retry's.
  const answered = page.waitForResponse(
    (r) => r.request().method() === "POST" && r.url() === api + "/auth/totp/device/verify" && r.status() !== 401,
  );
  await page.locator('input[name="totp"]').fill(totp(secret));
  await page.locator('button[type="submit"]').click();
  return (await answered).json();
}

// home waits for the protected home page and returns what /api/me said.
async function home(page, app, email) {
  await page.waitForURL((u) => u.origin === app.url && u.pathname === "/");
  await page.locator("#me-email").filter({ hasText: email }).waitFor({ state: "visible" });
  return {
    email: await page.locator("#me-email").textContent(),
    userId: await page.locator("#me-user-id").textContent(),
    tenantId: await page.locator("#me-tenant").textContent(),
  };
}

// ---- the prebuilt UI, per tenant --------------------------------------------------

describe("auth-react's prebuilt UI per tenant (demo -dev -tenants)", { timeout: 4 * TEST_TIMEOUT }, () => {
  let demo, app, api, browser;
  before(async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "auth-e2e-authreact-tenants-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    const bundle = await build(dir, "tenants");
    // The development providers' issuers, sign-in pages and redirect
    // URIs are on -app-url, the app's: its server passes /dev/ through
    // to the demo.
    const appPort = await freePort();
    const appURL = `http://localhost:${appPort}`;
    demo = await startDemo(["-dev", "-tenants", "-app-url", appURL, "-allowed-origin", appURL]);
    assert.match(demo.stdout, /demo: tenants on: acme signs in with Acme SSO/);
    api = `http://localhost:${demo.port}`;
    app = await serveApp(bundle, { apiDomain: api }, { port: appPort, host: "localhost", proxy: demo.url });
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await app?.close();
    await demo?.stop();
  });

  test("?tenantId=acme: only Acme SSO; its sign-in asks for TOTP set-up, then /api/me is acme's", { timeout: 2 * TEST_TIMEOUT }, () =>
    session(browser, "tenants-acme", async ({ page, step }) => {
      const w = watch(page, api);
      await watched(w, async () => {
        const email = `${unique("ann")}@${ACME.domain}`;
        const methods = page.waitForResponse((r) => r.url() === `${api}/auth/acme/loginmethods`);
        await step("acme's sign-in page", async () => {
          await page.goto(app.url + "/auth?tenantId=acme");
          await providerButton(page, ACME.provider).waitFor({ state: "visible" });
          assert.deepEqual(await (await methods).json(), {
            status: "OK",
            emailPassword: { enabled: false },
            thirdParty: { enabled: true, providers: [{ id: "acme-sso", name: ACME.provider }] },
            passwordless: { enabled: false },
            webauthn: { enabled: false },
            firstFactors: ["thirdparty"],
          });
        });
        await step("acme's methods only", async () => {
          assert.equal(await providerButton(page, DEV_PROVIDER).count(), 0, "the public tenant's provider");
          assert.equal(await page.locator('input[name="email"]').count(), 0, "an email field");
          assert.equal(await page.locator('input[name="password"]').count(), 0, "a password field");
          assert.equal(await ui(page, "providerButton").count(), 1, "provider buttons");
          assert.equal(await page.getByRole("button", { name: /passkey|passwordless/i }).count(), 0, "passkeys or passwordless");
        });
        await step("Acme SSO", async () => {
          await providerButton(page, ACME.provider).click();
          await signInAtProvider(page, app.url, ACME.oidc, "Acme", email);
        });
        await step("the sign-in, in acme", async () => {
          await page.waitForURL((u) => u.origin === app.url && u.pathname !== "/auth/callback/acme-sso");
          const [signinup] = await calls(page, "/auth/acme/signinup");
          assert.equal(signinup?.body?.status, "OK", JSON.stringify(signinup));
          assert.equal(signinup.request.thirdPartyId, "acme-sso");
          assert.equal(signinup.body.user.emails[0], email);
          assert.deepEqual(signinup.body.user.tenantIds, ["acme"]);
        });
        await step("TOTP is required: the set-up screen", async () => {
          const answer = await setUpTOTP(page, app, api);
          assert.deepEqual(answer, { status: "OK", wasAlreadyVerified: false });
        });
        const me = await step("signed in, in acme", () => home(page, app, email));
        assert.equal(me.tenantId, ACME.id);
        await step("the token", async () => {
          const p = await payload(page);
          assert.equal(p.tId, ACME.id);
          assert.equal(p["st-mfa"].v, true);
          assert.deepEqual(Object.keys(p["st-mfa"].c).sort(), ["thirdparty", "totp"]);
        });
      });
    }),
  );

  test("without ?tenantId: the public tenant's methods; a sign-up there is public", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "tenants-public", async ({ page, step }) => {
      const w = watch(page, api);
      await watched(w, async () => {
        const email = `${unique("pat")}@example.com`;
        // The SDK names no tenant for the public one.
        const methods = page.waitForResponse((r) => r.url() === `${api}/auth/loginmethods`);
        await step("the sign-up page", async () => {
          await page.goto(app.url + "/auth?show=signup");
          await ui(page, "headerTitle").filter({ hasText: T.SIGN_UP }).waitFor({ state: "visible" });
          const m = await (await methods).json();
          assert.deepEqual(m.thirdParty.providers, [{ id: "dev", name: DEV_PROVIDER }]);
          assert.equal(m.emailPassword.enabled, true);
        });
        await step("the public methods", async () => {
          await providerButton(page, DEV_PROVIDER).waitFor({ state: "visible" });
          await page.locator('input[name="email"]').waitFor({ state: "visible" });
          await page.locator('input[name="password"]').waitFor({ state: "visible" });
          assert.equal(await providerButton(page, ACME.provider).count(), 0, "acme's provider");
        });
        await step("sign up with a password", async () => {
          await page.locator('input[name="email"]').fill(email);
          await page.locator('input[name="password"]').fill(PASSWORD);
          await page.locator('form:has(input[name="password"]) button[type="submit"]').click();
        });
        const me = await step("signed in, in public", () => home(page, app, email));
        assert.equal(me.tenantId, "public");
        await step("the sign-up, in public", async () => {
          // The SDK names no tenant for the public one.
          const [signup] = await calls(page, "/auth/signup");
          assert.equal(signup?.body?.status, "OK", JSON.stringify(signup));
          assert.deepEqual(signup.body.user.tenantIds, ["public"]);
          assert.equal((await payload(page)).tId, "public");
        });
      });
    }),
  );
});

// ---- an invitation ------------------------------------------------------------------

// call calls the demo from page, as its own scripts do: through the SDK's
// fetch interceptor, which adds the session (cookies here), the headers
// the auth routes ask for, and refreshes an expired access token.
function call(page, method, p, body) {
  return page.evaluate(
    async ({ method, p, body }) => {
      const init = { method, credentials: "include", headers: {} };
      if (body !== undefined) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      const res = await fetch(p, init);
      const text = await res.text();
      let json = null;
      try {
        json = JSON.parse(text);
      } catch {}
      return { status: res.status, body: json ?? text };
    },
    { method, p, body },
  );
}

const MFA_403 = {
  message: "invalid claim",
  claimValidationErrors: [{ id: "st-mfa", reason: { message: "MFA requirement for auth is not satisfied" } }],
};

describe("an invitation to acme, accepted from the outbox (demo -dev -tenants -admin)", { timeout: 3 * TEST_TIMEOUT }, () => {
  const ADMIN = `admin-${process.pid}@example.com`;
  let demo, browser, base;
  before(async () => {
    // An admin is one whose address is verified, unless the demo verifies none.
    demo = await startDemo(["-dev", "-tenants", "-email-verification", "off", "-admin", ADMIN]);
    // -dev's app URL: the development provider's form takes posts from it only.
    base = `http://localhost:${demo.port}`;
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  // invite has the admin invite email to acme on the admin page, in a
  // browser context of its own.
  let adminSignedUp = false;
  async function invite(email) {
    const admin = await browser.newContext();
    try {
      const p = await admin.newPage();
      await open(p, base + "/");
      await signedOutUI(p);
      await p.fill("#email", ADMIN);
      await p.fill("#password", PASSWORD);
      await p.click(adminSignedUp ? "#signin" : "#signup");
      await signedInAs(p, ADMIN);
      adminSignedUp = true;
      // The admin page's form, which lists the invitation once sent.
      await open(p, base + "/admin");
      await p.getByRole("heading", { name: "Tenants" }).waitFor();
      await p.getByLabel("Invite an address to acme").fill(email);
      await p.getByRole("button", { name: "Invite", exact: true }).click();
      await p.locator("#admin-tenants li").filter({ hasText: "invited: " }).filter({ hasText: email }).waitFor();
      const tenants = await call(p, "GET", "/api/admin/tenants");
      assert.equal(tenants.status, 200, JSON.stringify(tenants.body));
      const acme = tenants.body.find((t) => t.id === ACME.id);
      assert.deepEqual(
        acme.invitations.filter((i) => i.email === email).map((i) => i.role),
        [""],
        "the invitation listed",
      );
    } finally {
      await admin.close().catch(() => {});
    }
  }

  // invitationLink opens the outbox page in a new tab of page's browser,
  // as a user would, and returns the link of the one invitation to email.
  async function invitationLink(page, email) {
    const outbox = await page.context().newPage();
    try {
      await outbox.goto(base + "/dev/outbox");
      const mail = outbox.locator("article").filter({ hasText: email }).filter({ hasText: "You are invited to join acme" });
      // The outbox reloads itself when an email arrives.
      await mail.waitFor({ state: "visible", timeout: 15_000 });
      assert.equal(await mail.count(), 1, "invitations to " + email);
      const a = mail.getByRole("link").filter({ hasText: "/auth/invitation?" });
      assert.equal(await a.count(), 1, "the link is clickable");
      const link = new URL(await a.getAttribute("href"));
      assert.equal(link.origin + link.pathname, base + "/auth/invitation");
      assert.equal(link.searchParams.get("tenantId"), ACME.id);
      assert.ok(link.searchParams.get("token"), `no token in ${link}`);
      return link;
    } finally {
      await outbox.close();
    }
  }

  test("the admin invites bob; bob signs in to acme with Acme SSO and accepts the link from the outbox", { timeout: 2 * TEST_TIMEOUT }, () =>
    session(browser, "tenants-invitation", async ({ page, step }) => {
      const bob = `${unique("bob")}@acme.example`;
      await step("the admin invites bob to acme", () => invite(bob));

      // The demo's own page with ?tenantId=acme offers acme's provider
      // alone; acme then asks for TOTP, so /api/me answers st-mfa.
      await step("bob signs in to acme with Acme SSO on the demo's page", async () => {
        await open(page, base + "/?tenantId=" + ACME.id);
        await signedOutUI(page);
        assert.equal(await page.locator("#password-signin").isHidden(), true, "acme's page shows no password form");
        await page.getByRole("button", { name: `Sign in with ${ACME.provider}` }).click();
        await page.waitForURL((u) => u.origin === base && u.pathname === "/dev/acme-oidc/authorize");
        await page.getByLabel("Email", { exact: true }).fill(bob);
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await page.waitForURL((u) => u.origin === base && !u.pathname.startsWith("/auth/callback/"));
        const me = await call(page, "GET", "/api/me");
        assert.deepEqual(me, { status: 403, body: MFA_403 });
      });

      const link = await step("the invitation on the outbox", () => invitationLink(page, bob));
      const token = link.searchParams.get("token");

      await step("bob opens the link and accepts it", async () => {
        await open(page, link.href);
        await page.getByRole("heading", { name: `An invitation to join ${ACME.id}` }).waitFor();
        await page.getByRole("button", { name: "Accept the invitation" }).click();
        await page.getByText("You are a member now.").waitFor();
        // It works once.
        const again = await call(page, "POST", "/auth/acme/tenant/invitation/accept", { token });
        assert.deepEqual(again, { status: 200, body: { status: "INVITATION_INVALID_ERROR" } });
      });

      await step("bob's tenants: acme alone, his session's", async () => {
        const mine = await call(page, "GET", "/auth/user/tenants");
        assert.deepEqual(mine, { status: 200, body: { status: "OK", tenants: [{ tenantId: "acme", current: true }] } });
      });

      await step("bob sets up TOTP: /api/me is acme's", async () => {
        const device = await call(page, "POST", "/auth/totp/device", {});
        assert.equal(device.status, 200, JSON.stringify(device.body));
        assert.equal(device.body.status, "OK", JSON.stringify(device.body));
        const verified = await call(page, "POST", "/auth/totp/device/verify", {
          deviceName: device.body.deviceName,
          totp: totp(device.body.secret),
        });
        assert.deepEqual(verified, { status: 200, body: { status: "OK", wasAlreadyVerified: false } });
        const me = await call(page, "GET", "/api/me");
        assert.equal(me.status, 200, JSON.stringify(me.body));
        assert.equal(me.body.email, bob);
        assert.equal(me.body.tenantId, ACME.id);
      });
    }),
  );

  // acme's only first factor is a provider's: a session that signed in
  // with a password is not moved there, member or not; its user signs in
  // to acme with acme's provider instead.
  test("a member who signed in with a password is not switched to acme: SIGN_IN_REQUIRED_ERROR", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "tenants-switch-password", async ({ page, step }) => {
      const carol = `${unique("carol")}@example.com`;
      await step("the admin invites carol to acme", () => invite(carol));
      await step("carol signs up in the public tenant, with a password", async () => {
        await open(page, base + "/");
        await signedOutUI(page);
        await page.fill("#email", carol);
        await page.fill("#password", PASSWORD);
        await page.click("#signup");
        await signedInAs(page, carol);
      });
      const link = await step("the invitation on the outbox", () => invitationLink(page, carol));
      await step("carol accepts it", async () => {
        const accepted = await call(page, "POST", "/auth/acme/tenant/invitation/accept", { token: link.searchParams.get("token") });
        assert.deepEqual(accepted, { status: 200, body: { status: "OK", tenantId: ACME.id } });
      });
      await step("the switch is refused; the session stays public", async () => {
        const switched = await call(page, "POST", "/auth/acme/tenant/switch");
        assert.deepEqual(switched, { status: 200, body: { status: "SIGN_IN_REQUIRED_ERROR" } });
        const me = await call(page, "GET", "/api/me");
        assert.equal(me.status, 200, JSON.stringify(me.body));
        assert.equal(me.body.tenantId, "public");
        const mine = await call(page, "GET", "/auth/user/tenants");
        assert.deepEqual(mine.body.tenants.find((t) => t.current), { tenantId: "public", current: true });
      });
    }),
  );
});
