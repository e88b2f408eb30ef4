// End-to-end tests of roles with the SuperTokens SDKs, in Chromium:
// e2e/authreact/roles.jsx (supertokens-auth-react, EmailPassword) against
// the demo run with -admin, whose home page SessionAuth keeps for the role
// admin. A user without the role gets auth-react's prebuilt access-denied
// screen, web-js's validators of UserRoleClaim and PermissionClaim fail on
// the access token the demo issued, and the demo's 403 "invalid claim"
// from GET /api/admin reaches the SDK as its API_INVALID_CLAIM event; the
// admin gets the page, passing validators and GET /api/admin. In cookie
// mode and in header mode.
//
//	cd e2e && npm ci && node --test roles.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ACCESS_TTL_MS, TEST_TIMEOUT, freePort, launch, session, sleep, startDemo } from "./helpers.mjs";
import { build } from "./authreact/build.mjs";
import { serveApp } from "./authreact/server.mjs";

const PASSWORD = "correct horse 7 battery";

// What the demo gives an admin (examples/demo/admins.go).
const ADMIN_PERMISSIONS = ["users:impersonate", "users:read", "users:write"];

// The English texts of the auth-react translation keys the tests look for
// (lib/build/sessionprebuiltui.js defaultTranslationsSession,
// emailpasswordprebuiltui.js).
const T = {
  SIGN_UP: "Sign Up", // AUTH_PAGE_HEADER_TITLE_SIGN_UP
  SIGN_IN: "Sign In", // AUTH_PAGE_HEADER_TITLE_SIGN_IN
  ACCESS_DENIED: "Access denied", // ACCESS_DENIED
  GO_BACK: "Go back", // GO_BACK
  LOG_OUT: "Log out", // LOGOUT
};

// wrongValue is the reason of a failed includes(expected), the demo's and
// web-js's validators' alike; INVALID_CLAIM the body of the demo's 403 for
// a session without the role admin.
const wrongValue = (expected, actual = []) => ({
  message: "wrong value",
  expectedToInclude: expected,
  actualValue: actual,
});
const INVALID_CLAIM = {
  message: "invalid claim",
  claimValidationErrors: [{ id: "st-role", reason: wrongValue("admin") }],
};

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

let bundle;
before(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "auth-e2e-authreact-roles-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  bundle = await build(dir, "roles");
});

// startStack runs the demo with admin as its one -admin and the roles app
// on its own port, the demo trusting the app's origin.
async function startStack(admin, mode) {
  const appPort = await freePort();
  const appURL = `http://127.0.0.1:${appPort}`;
  const demo = await startDemo(["-admin", admin, "-app-url", appURL, "-allowed-origin", appURL]);
  assert.match(demo.stdout, new RegExp(`demo: roles on: ${admin.replace(/[.+]/g, "\\$&")} gets the role admin`));
  const app = await serveApp(bundle, { apiDomain: demo.url, mode }, { port: appPort });
  return { demo, app };
}

// ---- the page ----------------------------------------------------------------

// watch records a page's answers from the demo and its console errors,
// for failure messages and for noConsoleErrors.
function watch(page, api) {
  const calls = [];
  const errors = [];
  const pending = new Set();
  page.on("requestfinished", (req) => {
    const u = new URL(req.url());
    if (u.origin !== api || req.method() === "OPTIONS") return;
    const call = { method: req.method(), path: u.pathname, status: 0, answer: "" };
    calls.push(call);
    const p = (async () => {
      const res = await req.response().catch(() => null);
      if (!res) return;
      call.status = res.status();
      call.answer = await res.text().catch(() => "");
    })();
    pending.add(p);
    p.finally(() => pending.delete(p));
  });
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  const log = () =>
    calls.map((c) => `${c.method} ${c.path} -> ${c.status} ${c.answer}`.replace(/\s+/g, " ")).join("\n    ");
  const settle = () => Promise.all(pending);
  return { page, calls, errors, log, settle };
}

// watched runs fn and adds the page's calls to the demo and its console
// errors to its error (session() takes the screenshot).
async function watched(w, fn) {
  try {
    return await fn();
  } catch (err) {
    await w.settle();
    err.message += `\n  calls to the demo:\n    ${w.log()}\n  console errors:\n    ${w.errors.join("\n    ")}`;
    throw err;
  }
}

// noConsoleErrors checks that the page logged no errors but Chromium's
// line for each 4xx answer, and that the demo refused nothing but
// refused, [method, path, status] of the answers expected, and the 401s
// the SDK answers with a refresh (the demo's access tokens live 3 s).
async function noConsoleErrors(w, refused = []) {
  await w.settle();
  assert.deepEqual(
    w.errors.filter((e) => !e.startsWith("Failed to load resource: the server responded with a status of")),
    [],
    "console errors in the page",
  );
  const have = w.calls
    .filter((c) => c.status >= 400)
    .filter((c) => !(c.status === 401 && (c.path === "/auth/session/refresh" || c.answer.includes("try refresh token"))))
    .map((c) => [c.method, c.path, c.status]);
  assert.deepEqual(have, refused, "calls the demo refused");
}

// ui finds an element of the prebuilt UI (in its shadow root, which
// Playwright's CSS locators pierce) by its data-supertokens name.
const ui = (page, name) => page.locator(`[data-supertokens~="${name}"]`);

const isAuthPage = (u) => u.pathname === "/auth" || u.pathname === "/auth/";

// signUp signs email up on the prebuilt sign-up form; auth-react then
// loads the home page.
async function signUp(page, app, email) {
  await page.goto(app.url + "/auth?show=signup");
  await ui(page, "headerTitle").filter({ hasText: T.SIGN_UP }).waitFor({ state: "visible" });
  await page.locator('input[name="email"]').fill(email);
  await page.locator('input[name="password"]').fill(PASSWORD);
  await page.locator('button[type="submit"]').click();
  await page.waitForURL((u) => u.origin === app.url && u.pathname === "/");
}

// accessDenied waits for auth-react's prebuilt access-denied screen and
// checks that the page it stands for is not there.
async function accessDenied(page) {
  const screen = (name, text) =>
    ui(page, "accessDenied").locator(`[data-supertokens~="${name}"]`).filter({ hasText: text });
  await screen("headerTitle", T.ACCESS_DENIED).waitFor({ state: "visible" });
  await screen("backButton", T.GO_BACK).waitFor({ state: "visible" });
  await screen("logoutButton", T.LOG_OUT).waitFor({ state: "visible" });
  assert.equal(await page.locator("#admin").count(), 0, "the admins' page behind the access-denied screen");
}

// adminPage waits for the admins' page to show what /api/me says of email
// and returns the user id.
async function adminPage(page, email) {
  await page.locator("#me-email").filter({ hasText: email }).waitFor({ state: "visible" });
  assert.equal(await ui(page, "accessDenied").count(), 0, "the access-denied screen on the admins' page");
  return page.locator("#session-user-id").textContent();
}

// sdk calls what the app gives the tests (window.authReactApp in
// roles.jsx) in page.
const sdk = (page) => ({
  events: (action) => page.evaluate((a) => window.authReactApp.events().filter((e) => e.action === a), action),
  payload: () => page.evaluate(() => window.authReactApp.accessTokenPayload()),
  validateRole: (role) => page.evaluate((r) => window.authReactApp.validateRole(r), role),
  validatePermission: (p) => page.evaluate((p) => window.authReactApp.validatePermission(p), p),
  admin: () => page.evaluate(() => window.authReactApp.admin()),
  doesSessionExist: () => page.evaluate(() => window.authReactApp.doesSessionExist()),
});

// claimsAre checks the access token's st-role and st-perm, as the SDK
// reads them: the lists the demo gave, read just now (t in milliseconds).
async function claimsAre(page, roles, permissions) {
  const p = await sdk(page).payload();
  assert.deepEqual(p["st-role"]?.v, roles, "st-role.v");
  assert.deepEqual(p["st-perm"]?.v, permissions, "st-perm.v");
  for (const name of ["st-role", "st-perm"]) {
    const age = Date.now() - p[name].t;
    assert.ok(age >= -5000 && age < 60_000, `${name}.t ${p[name].t} is not a time of the last minute in milliseconds`);
  }
}

// ---- the tests ---------------------------------------------------------------

for (const mode of ["cookie", "header"]) {
  describe(`roles with auth-react and web-js, ${mode} mode`, { timeout: 4 * TEST_TIMEOUT }, () => {
    const admin = newEmail(`roles-admin-${mode}`);
    let demo, web, browser;
    before(async () => {
      ({ demo, app: web } = await startStack(admin, mode));
      browser = await launch();
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await web?.close();
      await demo?.stop();
    });

    // me asks /api/me from the page, through the SDK.
    const me = (page) =>
      page.evaluate(async (api) => (await fetch(api + "/api/me", { credentials: "include" })).json(), demo.url);

    const denied = "without the role: the access-denied screen, failing validators, a 403 as API_INVALID_CLAIM";
    test(denied, { timeout: TEST_TIMEOUT }, () =>
      session(browser, `roles-denied-${mode}`, async ({ page, step }) => {
        const w = watch(page, demo.url);
        await watched(w, async () => {
          const email = newEmail(`roles-user-${mode}`);
          await step("sign up", () => signUp(page, web, email));
          await step("access denied", () => accessDenied(page));
          const a = sdk(page);
          await step("the claims", async () => {
            const m = await me(page);
            assert.equal(m.email, email);
            assert.deepEqual([m.roles, m.permissions], [[], []], "/api/me");
            await claimsAre(page, [], []);
          });
          await step("web-js's validators", async () => {
            assert.deepEqual(await a.validateRole("admin"), [{ id: "st-role", reason: wrongValue("admin") }]);
            assert.deepEqual(await a.validatePermission("users:write"), [
              { id: "st-perm", reason: wrongValue("users:write") },
            ]);
          });
          assert.deepEqual(await a.events("API_INVALID_CLAIM"), [], "API_INVALID_CLAIM before any call");
          await step("GET /api/admin", async () => {
            assert.deepEqual(await a.admin(), { status: 403, body: INVALID_CLAIM });
            await w.settle();
            const answered = w.calls.filter((c) => c.path === "/api/admin");
            assert.deepEqual(
              answered.map((c) => [c.status, c.answer.trim()]),
              [[403, JSON.stringify(INVALID_CLAIM)]],
              "the demo's answer, byte for byte",
            );
          });
          await step("API_INVALID_CLAIM", async () => {
            assert.deepEqual(
              (await a.events("API_INVALID_CLAIM")).map((e) => [e.recipe, e.claimValidationErrors]),
              [["session", INVALID_CLAIM.claimValidationErrors]],
            );
            // SessionAuth checks again on the event: still denied.
            await accessDenied(page);
          });
          await noConsoleErrors(w, [["GET", "/api/admin", 403]]);
          await step("log out", async () => {
            await ui(page, "logoutButton").click();
            await page.waitForURL((u) => isAuthPage(u) && u.searchParams.get("show") === "signin");
            await ui(page, "headerTitle").filter({ hasText: T.SIGN_IN }).waitFor({ state: "visible" });
            assert.equal(await a.doesSessionExist(), false);
          });
        });
      }),
    );

    test("the admin: the page, passing validators, and GET /api/admin", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `roles-admin-${mode}`, async ({ page, step, ok200 }) => {
        const w = watch(page, demo.url);
        await watched(w, async () => {
          await step("sign up", () => signUp(page, web, admin));
          const userId = await step("the admins' page", () => adminPage(page, admin));
          await step("what the page shows", async () => {
            await page.locator("#me-roles").filter({ hasText: JSON.stringify(["admin"]) }).waitFor();
            await page.locator("#me-permissions").filter({ hasText: JSON.stringify(ADMIN_PERMISSIONS) }).waitFor();
            await page.locator("#admin-answer").filter({ hasText: /^200 / }).waitFor();
          });
          const a = sdk(page);
          await step("the claims", async () => {
            const m = await me(page);
            assert.deepEqual([m.roles, m.permissions], [["admin"], ADMIN_PERMISSIONS], "/api/me");
            await claimsAre(page, ["admin"], ADMIN_PERMISSIONS);
          });
          await step("web-js's validators", async () => {
            assert.deepEqual(await a.validateRole("admin"), []);
            assert.deepEqual(await a.validatePermission("users:write"), []);
            // A role the admin lacks fails with the admin's list.
            assert.deepEqual(await a.validateRole("editor"), [
              { id: "st-role", reason: wrongValue("editor", ["admin"]) },
            ]);
          });
          await step("GET /api/admin", async () => {
            assert.deepEqual(await a.admin(), { status: 200, body: { userId, permissions: ADMIN_PERMISSIONS } });
          });
          await step("after a refresh", async () => {
            // The access token expires; the refreshed one carries the
            // claims, read again (t moves on).
            const before = (await a.payload())["st-role"].t;
            await sleep(ACCESS_TTL_MS + 500);
            assert.deepEqual(await a.admin(), { status: 200, body: { userId, permissions: ADMIN_PERMISSIONS } });
            assert.ok(ok200() >= 1, "no refresh");
            await claimsAre(page, ["admin"], ADMIN_PERMISSIONS);
            assert.ok((await a.payload())["st-role"].t > before, "st-role.t after the refresh");
          });
          await step("reload", async () => {
            // SessionAuth checks the claims again on the refresh, under
            // the SDK's cross-tab lock; a reload while it holds the lock
            // leaves it behind, and the new page waits seconds for it.
            await sleep(500);
            await page.waitForFunction(() =>
              Object.keys(localStorage).every((k) => !k.startsWith("browser-tabs-lock-key-")),
            );
            await page.reload();
            await adminPage(page, admin);
          });
          assert.deepEqual(await a.events("API_INVALID_CLAIM"), []);
          await noConsoleErrors(w);
        });
      }),
    );
  });
}
