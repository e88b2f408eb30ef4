// End-to-end tests of multi-factor auth with the prebuilt UI of
// supertokens-auth-react (e2e/authreact/mfa.jsx: EmailPassword,
// MultiFactorAuth, TOTP and WebAuthn) against the demo run with -mfa, in
// Chromium: an authenticator app set up from the secret the QR screen
// shows, its codes at sign-in (a wrong one, the right one, the lockout
// screen), and a passkey as the second factor through Chrome's virtual
// authenticator. Codes are computed here (RFC 6238).
//
//	cd e2e && npm ci && node --test authreact-mfa.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). The app and the demo are both named localhost
// (browsers refuse passkeys on IP addresses). Screenshots of failed steps
// go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { TEST_TIMEOUT, freePort, launch, session, sleep, startDemo, virtualAuthenticator } from "./helpers.mjs";
import { build } from "./authreact/build.mjs";
import { serveApp } from "./authreact/server.mjs";

const PASSWORD = "correct horse 7 battery";

// The English texts of the auth-react translation keys the tests look for
// (lib/build/totpprebuiltui.js defaultTranslationsTOTP,
// webauthnprebuiltui.js defaultTranslationsWebauthn,
// multifactorauthprebuiltui.js, superTokens.js).
const T = {
  SIGN_UP: "Sign Up", // AUTH_PAGE_HEADER_TITLE_SIGN_UP
  SIGN_IN: "Sign In", // AUTH_PAGE_HEADER_TITLE_SIGN_IN
  TOTP_SETUP_TITLE: "Add a TOTP device", // TOTP_DEVICE_SETUP_HEADER_TITLE
  TOTP_SHOW_SECRET: "Unable to scan? Use a", // TOTP_SHOW_SECRET_START
  TOTP_SECRET_LINK: "secret key", // TOTP_SHOW_SECRET_LINK
  TOTP_TITLE: "Enter TOTP", // TOTP_CODE_VERIFICATION_HEADER_TITLE
  // ERROR_TOTP_INVALID_CODE, then ERROR_TOTP_INVALID_CODE_RETRY_START (""),
  // maxNumberOfFailedAttempts - currentNumberOfFailedAttempts + 1, and
  // ERROR_TOTP_INVALID_CODE_RETRY_END (getErrorString).
  TOTP_INVALID: "Invalid TOTP. Please try again.",
  TOTP_INVALID_LEFT: (n) =>
    `Invalid TOTP. Please try again. ${n}\u00a0attempt(s) remaining before account is temporarily locked.`,
  BLOCKED_TITLE: "Account locked", // TOTP_BLOCKED_TITLE
  BLOCKED_SUBTITLE: "Account locked due to multiple failed login attempts.", // TOTP_BLOCKED_SUBTITLE
  FACTOR_CHOOSER: "Please select a factor", // MULTI_FACTOR_CHOOSER_HEADER_TITLE
  PASSKEY_REGISTER: "Register a passkey", // WEBAUTHN_MFA_REGISTER_PASSKEY_TITLE
  PASSKEY_USE: "Use a Passkey", // WEBAUTHN_MFA_SIGN_IN_HEADER_TITLE
  PASSKEY_USE_SUBTITLE: "To finish signing in, click the button and follow the browser instructions.", // ..._SUBTITLE
  PASSKEY_CONTINUE_WITH: "Continue with", // WEBAUTHN_CONTINUE_WITH_EMAIL_SUBTEXT
};

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

// ---- TOTP (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps) -------------------

const PERIOD = 30;

function base32(s) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0;
  let value = 0;
  const out = [];
  for (const c of s.replace(/=+$/, "").toUpperCase()) {
    const v = alphabet.indexOf(c);
    if (v < 0) throw new Error(`not base32: ${JSON.stringify(s)}`);
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

// totpCode is the code of secret (base32) for the 30-second step.
function totpCode(secret, step) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const h = createHmac("sha1", base32(secret)).update(counter).digest();
  const off = h[h.length - 1] & 0x0f;
  return String((h.readUInt32BE(off) & 0x7fffffff) % 1_000_000).padStart(6, "0");
}

const stepNow = () => Math.floor(Date.now() / 1000 / PERIOD);

// untilStep waits until step is the current one.
async function untilStep(step) {
  const wait = step * PERIOD * 1000 - Date.now();
  if (wait > 0) await sleep(wait + 200);
}

// wrongCode is a six-digit code that no step near now has.
function wrongCode(secret) {
  const near = new Set([-2, -1, 0, 1, 2].map((d) => totpCode(secret, stepNow() + d)));
  for (let n = 123456; ; n = (n + 111_111) % 1_000_000) {
    const c = String(n).padStart(6, "0");
    if (!near.has(c)) return c;
  }
}

// Checks the function against RFC 6238's SHA-1 test vectors (8 digits
// there; the last 6 here).
test("the tests' TOTP function gives RFC 6238's codes", () => {
  const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"; // "12345678901234567890"
  assert.equal(totpCode(secret, Math.floor(59 / 30)), "287082");
  assert.equal(totpCode(secret, Math.floor(1111111109 / 30)), "081804");
  assert.equal(totpCode(secret, Math.floor(1234567890 / 30)), "005924");
  assert.equal(totpCode(secret, Math.floor(20000000000 / 30)), "353130");
});

// ---- the stack ----------------------------------------------------------------

let bundle;
before(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "auth-e2e-authreact-mfa-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  bundle = await build(dir, "mfa");
});

// startStack runs the demo with -mfa factors (and passkeys, for
// totp,webauthn) and the MFA app on its own port, both named localhost.
async function startStack(factors, mode) {
  const appPort = await freePort();
  const appURL = `http://localhost:${appPort}`;
  const args = ["-mfa", factors, "-app-url", appURL, "-allowed-origin", appURL];
  if (factors.includes("webauthn")) args.push("-passkeys");
  const demo = await startDemo(args);
  assert.match(demo.stdout, /demo: MFA on/);
  const api = `http://localhost:${demo.port}`;
  const app = await serveApp(bundle, { apiDomain: api, mode }, { port: appPort, host: "localhost" });
  return { demo, app, api };
}

// ---- the page -------------------------------------------------------------------

// watch records a page's calls to the demo (request and answer) and its
// console errors, for failure messages. The answer of a call the page
// navigates away after is often lost: the app's own record (calls())
// keeps those.
function watch(page, api) {
  const calls = [];
  const errors = [];
  const pending = new Set();
  page.on("requestfinished", (req) => {
    const u = new URL(req.url());
    if (u.origin !== api) return;
    const call = { method: req.method(), path: u.pathname + u.search, body: req.postData(), status: 0, answer: "" };
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
  page.on("requestfailed", (req) => {
    if (new URL(req.url()).origin === api) calls.push({ method: req.method(), path: req.url(), failed: req.failure()?.errorText });
  });
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  const log = () =>
    calls
      .filter((c) => c.method !== "OPTIONS")
      .map((c) =>
        c.failed
          ? `${c.method} ${c.path} failed: ${c.failed}`
          : `${c.method} ${c.path} ${c.body ?? ""} -> ${c.status} ${c.answer}`.replace(/\s+/g, " "),
      )
      .join("\n    ");
  const settle = () => Promise.all(pending);
  return { page, calls, errors, log, settle };
}

// watched runs fn and adds the demo calls and console errors of the
// watched page to its error (session() takes the screenshot).
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
// line for each 4xx answer, and that the demo refused nothing but what
// refused is given: [method, path, status] of the answers expected.
async function noConsoleErrors(w, refused = []) {
  await w.settle();
  assert.deepEqual(
    w.errors.filter((e) => !e.startsWith("Failed to load resource: the server responded with a status of")),
    [],
    "console errors in the page",
  );
  // A 401 that asks for a refresh is the SDK's to answer (the demo's
  // access tokens live 3 s); it refreshes and sends the call again.
  const have = w.calls
    .filter((c) => c.status >= 400)
    .filter((c) => !(c.status === 401 && (c.path === "/auth/session/refresh" || c.answer.includes("try refresh token"))))
    .map((c) => [c.method, c.path, c.status]);
  assert.deepEqual(have, refused, "calls the demo refused");
}

// ui finds an element of the prebuilt UI (in its shadow root, which
// Playwright's CSS locators pierce) by its data-supertokens names (one, or
// several separated by spaces, all of which it must have).
const ui = (page, names) =>
  page.locator(
    names
      .split(" ")
      .map((n) => `[data-supertokens~="${n}"]`)
      .join(""),
  );

const isAuthPage = (u) => u.pathname === "/auth" || u.pathname === "/auth/";

// calls lists the calls the app recorded (mfa.jsx recordCall), of path if
// given: { recipe, action, method, path, request, status, body }.
async function calls(page, p) {
  const all = await page.evaluate(() => window.authReactApp.calls());
  return p === undefined ? all : all.filter((c) => c.path === p);
}

// passwordForm fills the sign-up or sign-in form (the page shows one).
async function passwordForm(page, email) {
  await page.locator('input[name="email"]').fill(email);
  await page.locator('input[name="password"]').fill(PASSWORD);
  await page.locator('button[type="submit"]').click();
}

async function signUp(page, app, email) {
  await page.goto(app.url + "/auth?show=signup");
  await ui(page, "headerTitle").filter({ hasText: T.SIGN_UP }).waitFor({ state: "visible" });
  await passwordForm(page, email);
}

async function signIn(page, app, email) {
  if (!isAuthPage(new URL(page.url()))) await page.goto(app.url + "/auth");
  await ui(page, "headerTitle").filter({ hasText: T.SIGN_IN }).waitFor({ state: "visible" });
  await passwordForm(page, email);
}

// setupScreen waits for the TOTP set-up (QR) screen, shows the secret and
// returns it.
async function setupScreen(page, app) {
  await page.waitForURL((u) => u.origin === app.url && u.pathname === "/auth/mfa/totp");
  await ui(page, "headerTitle").filter({ hasText: T.TOTP_SETUP_TITLE }).waitFor({ state: "visible" });
  await ui(page, "totpDeviceQR").waitFor({ state: "visible" });
  await ui(page, "showTOTPSecret").filter({ hasText: T.TOTP_SHOW_SECRET }).waitFor({ state: "visible" });
  assert.equal(await ui(page, "totpSecret").count(), 0, "the secret shown before the click");
  await ui(page, "showTOTPSecretBtn").filter({ hasText: T.TOTP_SECRET_LINK }).click();
  const secret = (await ui(page, "totpSecret").textContent()).trim();
  assert.match(secret, /^[A-Z2-7]{16,}=*$/, "the secret is base32");
  return secret;
}

// codeScreen waits for the TOTP code screen of a sign-in.
async function codeScreen(page, app) {
  await page.waitForURL((u) => u.origin === app.url && u.pathname === "/auth/mfa/totp");
  await ui(page, "headerTitle").filter({ hasText: T.TOTP_TITLE }).waitFor({ state: "visible" });
  await page.locator('input[name="totp"]').waitFor({ state: "visible" });
  assert.equal(await ui(page, "totpDeviceQR").count(), 0, "a QR code at sign-in");
}

// typeCode types a TOTP code and waits for the demo's answer.
async function typeCode(page, api, code) {
  // An answer of 401 (the access token expired) is the SDK's cue to
  // refresh and send the code again: the answer is the retry's.
  const answered = page.waitForResponse(
    (r) =>
      r.request().method() === "POST" &&
      r.url().startsWith(api + "/auth/totp/") &&
      r.url().endsWith("verify") &&
      r.status() !== 401,
  );
  await page.locator('input[name="totp"]').fill(code);
  await page.locator('button[type="submit"]').click();
  return (await answered).json().catch(() => null);
}

// signedIn waits for the home page to show what /api/me says of email and
// returns the user id.
async function signedIn(page, app, email) {
  await page.waitForURL((u) => u.origin === app.url && u.pathname === "/");
  await page.locator("#me-email").filter({ hasText: email }).waitFor({ state: "visible" });
  const userId = await page.locator("#me-user-id").textContent();
  assert.equal(await page.locator("#session-user-id").textContent(), userId, "session user id and /api/me's");
  return userId;
}

async function signOut(page) {
  await page.locator("#sign-out").click();
  await page.waitForURL((u) => isAuthPage(u));
}

// claim is the st-mfa claim of the access token the SDK holds.
async function claim(page) {
  const p = await page.evaluate(() => window.authReactApp.accessTokenPayload());
  return p["st-mfa"];
}

// sessionHandle is the session handle of the access token the SDK holds:
// a second factor completes in the same session.
async function sessionHandle(page) {
  const p = await page.evaluate(() => window.authReactApp.accessTokenPayload());
  assert.equal(typeof p.sessionHandle, "string");
  return p.sessionHandle;
}

// tokensWhere checks where the tokens are: cookies in cookie mode, none
// in header mode.
async function tokensWhere(page, mode) {
  const names = (await page.context().cookies()).map((c) => c.name);
  assert.equal(names.includes("sAccessToken"), mode === "cookie", `cookies: ${names}`);
}

// apiMe calls GET /api/me from the page, through the SDK's interceptor.
function apiMe(page, api) {
  return page.evaluate(async (api) => {
    const res = await fetch(api + "/api/me", { credentials: "include" });
    return { status: res.status, body: await res.json().catch(() => null) };
  }, api);
}

const MFA_403 = {
  message: "invalid claim",
  claimValidationErrors: [{ id: "st-mfa", reason: { message: "MFA requirement for auth is not satisfied" } }],
};

// setUpTOTP signs up email and sets up TOTP from the QR screen's secret;
// it returns the secret, the step of the code used and the user id.
async function setUpTOTP(page, step, app, api, email) {
  await step("sign up", () => signUp(page, app, email));
  const secret = await step("QR screen: show the secret", () => setupScreen(page, app));
  const handle = await step("MFA pending", async () => {
    const c = await claim(page);
    assert.equal(c.v, false);
    assert.deepEqual(Object.keys(c.c), ["emailpassword"]);
    assert.equal(typeof c.c.emailpassword, "number");
    assert.deepEqual(await apiMe(page, api), { status: 403, body: MFA_403 });
    return sessionHandle(page);
  });
  const setupStep = stepNow();
  const answer = await step("type the code", () => typeCode(page, api, totpCode(secret, setupStep)));
  assert.deepEqual(answer, { status: "OK", wasAlreadyVerified: false });
  const userId = await step("signed in", () => signedIn(page, app, email));
  const c = await claim(page);
  assert.equal(c.v, true);
  assert.deepEqual(Object.keys(c.c).sort(), ["emailpassword", "totp"]);
  assert.equal(await sessionHandle(page), handle, "the session after TOTP");
  return { secret, setupStep, userId };
}

// ---- TOTP -------------------------------------------------------------------------

for (const mode of ["cookie", "header"]) {
  describe(`auth-react MFA with TOTP, ${mode} mode`, { timeout: 4 * TEST_TIMEOUT }, () => {
    let demo, app, api, browser;
    before(async () => {
      ({ demo, app, api } = await startStack("totp", mode));
      browser = await launch();
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await app?.close();
      await demo?.stop();
    });

    const totpTitle = "sign up, set up TOTP from the QR screen's secret; sign in again: a wrong code, then a later step's";
    test(totpTitle, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `ar-mfa-totp-${mode}`, async ({ page, step }) => {
        const w = watch(page, api);
        await watched(w, async () => {
          const email = newEmail(`ar-mfa-totp-${mode}`);
          const { secret, setupStep, userId } = await setUpTOTP(page, step, app, api, email);

          // What the SDK sent and got, as the app recorded it.
          await step("the set-up calls", async () => {
            const [info] = await calls(page, "/auth/mfa/info");
            assert.equal(info.method, "PUT");
            assert.equal(info.status, 200);
            assert.deepEqual(info.body.factors, { next: ["totp"], alreadySetup: ["emailpassword"], allowedToSetup: ["totp"] });
            const [create] = await calls(page, "/auth/totp/device");
            assert.deepEqual(create.request, {});
            assert.equal(create.body.status, "OK");
            assert.equal(create.body.deviceName, "TOTP Device 0");
            assert.equal(create.body.secret, secret);
            const qr = new URL(create.body.qrCodeString);
            assert.equal(qr.protocol, "otpauth:");
            assert.equal(qr.searchParams.get("secret"), secret);
            assert.ok(decodeURIComponent(qr.pathname).includes(email), `the QR names the user: ${create.body.qrCodeString}`);
            const [verify] = await calls(page, "/auth/totp/device/verify");
            assert.deepEqual(verify.request, { deviceName: "TOTP Device 0", totp: totpCode(secret, setupStep) });
          });
          await step("reload: still signed in", async () => {
            await page.reload();
            assert.equal(await signedIn(page, app, email), userId);
          });

          await step("sign out", () => signOut(page));
          await step("sign in", () => signIn(page, app, email));
          await step("code screen", () => codeScreen(page, app));
          await step("MFA pending", async () => {
            assert.equal((await claim(page)).v, false);
            assert.deepEqual(await apiMe(page, api), { status: 403, body: MFA_403 });
          });
          await step("wrong code", async () => {
            const bad = wrongCode(secret);
            const answer = await typeCode(page, api, bad);
            assert.deepEqual(answer, {
              status: "INVALID_TOTP_ERROR",
              currentNumberOfFailedAttempts: 1,
              maxNumberOfFailedAttempts: 5,
            });
            const err = ui(page, "generalError");
            await err.filter({ hasText: T.TOTP_INVALID }).waitFor({ state: "visible" });
            assert.equal(await err.textContent(), T.TOTP_INVALID_LEFT(5));
            await codeScreen(page, app);
          });
          // A code of a later step than the set-up's: cookie mode waits
          // until that step is the current one; header mode types it
          // while the set-up's step may still be current, which the
          // demo's skew of one step accepts.
          const next = setupStep + 1;
          if (mode === "cookie") await step("wait for the next step", () => untilStep(next));
          await step("the next step's code", async () => {
            const answer = await typeCode(page, api, totpCode(secret, next));
            assert.deepEqual(answer, { status: "OK" });
          });
          assert.equal(await step("signed in again", () => signedIn(page, app, email)), userId);
          await step("claim", async () => {
            const c = await claim(page);
            assert.equal(c.v, true);
            assert.deepEqual(Object.keys(c.c).sort(), ["emailpassword", "totp"]);
          });
          await step("sign-in calls", async () => {
            const verifies = await calls(page, "/auth/totp/verify");
            assert.deepEqual(
              verifies.map((c) => [c.method, c.request?.totp?.length, c.body.status]),
              [
                ["POST", 6, "INVALID_TOTP_ERROR"],
                ["POST", 6, "OK"],
              ],
            );
            assert.equal((await calls(page, "/auth/totp/device")).length, 1, "a second device made at sign-in");
          });
          await tokensWhere(page, mode);
          if (mode === "cookie") {
            // Step-up: the TOTP page with ?stepUp=true asks a signed-in
            // user for a code again. The step after the sign-in's is
            // accepted at once: the sign-in's is current (skew of one).
            const before = await claim(page);
            const handle = await sessionHandle(page);
            await step("step-up", async () => {
              await page.goto(app.url + "/auth/mfa/totp?stepUp=true");
              await codeScreen(page, app);
              const answer = await typeCode(page, api, totpCode(secret, next + 1));
              assert.deepEqual(answer, { status: "OK" });
              assert.equal(await signedIn(page, app, email), userId);
            });
            const after = await claim(page);
            assert.equal(after.v, true);
            assert.ok(after.c.totp >= before.c.totp, `c.totp ${before.c.totp}, then ${after.c.totp}`);
            assert.equal(after.c.emailpassword, before.c.emailpassword);
            assert.equal(await sessionHandle(page), handle, "the session after the step-up");
          }
          await noConsoleErrors(w, [
            ["GET", "/api/me", 403],
            ["GET", "/api/me", 403],
          ]);
        });
      }),
    );

    if (mode === "header") return;

    test("five wrong codes lock the second factor: the UI's blocked screen, with a timer", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-mfa-locked-${mode}`, async ({ page, step }) => {
        const w = watch(page, api);
        await watched(w, async () => {
          const email = newEmail(`ar-mfa-locked-${mode}`);
          const { secret, setupStep } = await setUpTOTP(page, step, app, api, email);
          await step("sign out", () => signOut(page));
          await step("sign in", () => signIn(page, app, email));
          await step("code screen", () => codeScreen(page, app));
          for (let i = 1; i <= 5; i++) {
            await step(`wrong code ${i}`, async () => {
              const answer = await typeCode(page, api, wrongCode(secret));
              assert.deepEqual(answer, {
                status: "INVALID_TOTP_ERROR",
                currentNumberOfFailedAttempts: i,
                maxNumberOfFailedAttempts: 5,
              });
              await ui(page, "generalError").filter({ hasText: T.TOTP_INVALID_LEFT(6 - i) }).waitFor({ state: "visible" });
            });
          }
          // The fifth wrong code locked the user: the next code, even the
          // right one, is refused with LIMIT_REACHED_ERROR, which the UI
          // answers with its blocked screen.
          const right = totpCode(secret, Math.max(stepNow(), setupStep + 1));
          await step("the right code, locked", async () => {
            const answer = await typeCode(page, api, right);
            assert.equal(answer.status, "LIMIT_REACHED_ERROR");
            assert.ok(answer.retryAfterMs > 14 * 60_000 && answer.retryAfterMs <= 15 * 60_000, `retryAfterMs ${answer.retryAfterMs}`);
          });
          await step("blocked screen", async () => {
            await ui(page, "blockedScreen").waitFor({ state: "visible" });
            await ui(page, "headerTitle").filter({ hasText: T.BLOCKED_TITLE }).waitFor({ state: "visible" });
            await ui(page, "headerSubtitle").filter({ hasText: T.BLOCKED_SUBTITLE }).waitFor({ state: "visible" });
            const retry = ui(page, "retryCodeBtn");
            assert.equal(await retry.isDisabled(), true, "the retry button is enabled");
            const timer = (await retry.textContent()).trim();
            assert.match(timer, /^1[45]:\d\d$/, "the retry timer");
            assert.equal(await page.locator('input[name="totp"]').count(), 0);
          });
          await step("still pending", async () => {
            assert.equal((await claim(page)).v, false);
            assert.deepEqual(await apiMe(page, api), { status: 403, body: MFA_403 });
          });
          await noConsoleErrors(w, [
            ["GET", "/api/me", 403],
            ["GET", "/api/me", 403],
          ]);
        });
      }),
    );

    test("Logout on the QR screen removes the device not set up: the next sign-in shows a new secret", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-mfa-logout-${mode}`, async ({ page, step }) => {
        const w = watch(page, api);
        await watched(w, async () => {
          const email = newEmail(`ar-mfa-logout-${mode}`);
          await step("sign up", () => signUp(page, app, email));
          const first = await step("QR screen", () => setupScreen(page, app));
          await step("Logout", async () => {
            await ui(page, "deviceSetupFooter").locator('[data-supertokens~="secondaryLinkWithLeftArrow"]').click();
            await page.waitForURL((u) => isAuthPage(u));
            await ui(page, "headerTitle").filter({ hasText: T.SIGN_IN }).waitFor({ state: "visible" });
          });
          await step("the device removed", async () => {
            const [remove] = await calls(page, "/auth/totp/device/remove");
            assert.equal(remove.method, "POST");
            assert.deepEqual(remove.request, { deviceName: "TOTP Device 0" });
            assert.deepEqual(remove.body, { status: "OK", didDeviceExist: true });
            assert.equal(w.calls.filter((c) => c.method === "POST" && c.path === "/auth/signout").length, 1);
            assert.equal(await page.evaluate(() => window.authReactApp.doesSessionExist()), false);
          });
          await step("sign in", () => signIn(page, app, email));
          const second = await step("QR screen again", () => setupScreen(page, app));
          assert.notEqual(second, first, "the secret of the removed device");
          await step("a code of the removed device", async () => {
            const answer = await typeCode(page, api, totpCode(first, stepNow()));
            assert.deepEqual(answer, { status: "INVALID_TOTP_ERROR", currentNumberOfFailedAttempts: 1, maxNumberOfFailedAttempts: 5 });
            await ui(page, "generalError").filter({ hasText: T.TOTP_INVALID_LEFT(5) }).waitFor({ state: "visible" });
          });
          await step("the new device's code", async () => {
            const answer = await typeCode(page, api, totpCode(second, stepNow()));
            assert.deepEqual(answer, { status: "OK", wasAlreadyVerified: false });
          });
          await step("signed in", () => signedIn(page, app, email));
          await noConsoleErrors(w);
        });
      }),
    );
  });
}

// ---- a passkey as the second factor ------------------------------------------------

for (const mode of ["cookie", "header"]) {
  describe(`auth-react MFA with a passkey, ${mode} mode`, { timeout: 3 * TEST_TIMEOUT }, () => {
    let demo, app, api, browser;
    before(async () => {
      ({ demo, app, api } = await startStack("totp,webauthn", mode));
      browser = await launch();
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await app?.close();
      await demo?.stop();
    });

    const passkeyTitle = "sign up with a password, register a passkey as the second factor; sign in again with both";
    test(passkeyTitle, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `ar-mfa-passkey-${mode}`, async ({ page, step }) => {
        const w = watch(page, api);
        const authn = await virtualAuthenticator(page);
        await watched(w, async () => {
          const email = newEmail(`ar-mfa-passkey-${mode}`);
          await step("sign up", () => signUp(page, app, email));
          await step("factor chooser", async () => {
            await page.waitForURL((u) => u.origin === app.url && u.pathname === "/auth/mfa");
            await ui(page, "headerTitle").filter({ hasText: T.FACTOR_CHOOSER }).waitFor({ state: "visible" });
            await ui(page, "factorChooserOption totp").waitFor({ state: "visible" });
            await ui(page, "factorChooserOption webauthn").click();
          });
          const handle = await step("register screen", async () => {
            await page.waitForURL((u) => u.origin === app.url && u.pathname === "/auth/mfa/webauthn");
            await ui(page, "headerTitle").filter({ hasText: T.PASSKEY_REGISTER }).first().waitFor({ state: "visible" });
            assert.equal((await claim(page)).v, false);
            return sessionHandle(page);
          });
          // auth-react (webauthnprebuiltui.js, MFAFeatureInner's onLoad)
          // offers the first address of /mfa/info's emails.webauthn to
          // confirm; without one it asks for an address first. The demo
          // lists no emails.webauthn (SuperTokens does), so the screen asks.
          await step("the address", async () => {
            const [info] = await calls(page, "/auth/mfa/info");
            const offered = info.body.emails.webauthn?.[0];
            const asked = page.locator('input[name="email"]');
            const confirm = ui(page, "passkeyConfirmationContainer");
            if (offered === undefined) {
              await asked.waitFor({ state: "visible" });
              assert.equal(await asked.inputValue(), "", "the address field's value");
              await asked.fill(email);
              await page.locator('button[type="submit"]').click();
            } else {
              assert.equal(offered, email);
            }
            await confirm.waitFor({ state: "visible" });
            await ui(page, "continueWithLabel").filter({ hasText: T.PASSKEY_CONTINUE_WITH }).waitFor({ state: "visible" });
            await ui(page, "enteredEmailId").filter({ hasText: email }).waitFor({ state: "visible" });
          });
          await step("register the passkey", async () => {
            await ui(page, "passkeyConfirmationFooter").locator("button").click();
          });
          const userId = await step("signed in", () => signedIn(page, app, email));
          const registeredCount = await step("the passkey", async () => {
            const creds = await authn.credentials();
            assert.equal(creds.length, 1);
            assert.equal(creds[0].rpId, "localhost");
            const c = await claim(page);
            assert.equal(c.v, true);
            assert.deepEqual(Object.keys(c.c).sort(), ["emailpassword", "webauthn"]);
            assert.equal(await sessionHandle(page), handle, "the session after the passkey");
            await tokensWhere(page, mode);
            return creds[0].signCount;
          });
          await step("the set-up calls", async () => {
            const [info] = await calls(page, "/auth/mfa/info");
            assert.deepEqual(info.body.factors, {
              next: ["totp", "webauthn"],
              alreadySetup: ["emailpassword"],
              allowedToSetup: ["totp", "webauthn"],
            });
            const [options] = await calls(page, "/auth/webauthn/options/register");
            assert.deepEqual(options.request, { email });
            const [signup] = await calls(page, "/auth/webauthn/signup");
            assert.equal(signup.request.shouldTryLinkingWithSessionUser, true);
            assert.equal(signup.body.status, "OK");
            assert.equal(signup.body.user.id, userId);
          });

          await step("sign out", () => signOut(page));
          await step("sign in", () => signIn(page, app, email));
          await step("passkey screen", async () => {
            await page.waitForURL((u) => u.origin === app.url && u.pathname === "/auth/mfa/webauthn");
            await ui(page, "headerTitle").filter({ hasText: T.PASSKEY_USE }).waitFor({ state: "visible" });
            await ui(page, "headerSubtitle").filter({ hasText: T.PASSKEY_USE_SUBTITLE }).waitFor({ state: "visible" });
            // No other passkey may be set up instead of the one the user has.
            assert.equal(await ui(page, "passkeyMfaSignInDivider").count(), 0, "the screen offers to register a passkey");
            assert.equal((await claim(page)).v, false);
            const info = (await calls(page, "/auth/mfa/info")).at(-1);
            assert.deepEqual(info.body.factors, {
              next: ["webauthn"],
              alreadySetup: ["emailpassword", "webauthn"],
              allowedToSetup: [],
            });
          });
          await step("use the passkey", () => ui(page, "container webauthn-mfa").locator('button[type="button"]').first().click());
          assert.equal(await step("signed in again", () => signedIn(page, app, email)), userId);
          await step("the sign-in", async () => {
            const c = await claim(page);
            assert.equal(c.v, true);
            assert.deepEqual(Object.keys(c.c).sort(), ["emailpassword", "webauthn"]);
            const signins = await calls(page, "/auth/webauthn/signin");
            assert.equal(signins.length, 1);
            assert.equal(signins[0].request.shouldTryLinkingWithSessionUser, true);
            assert.equal(signins[0].body.status, "OK");
            const creds = await authn.credentials();
            const count = creds[0].signCount;
            assert.ok(count > registeredCount, `the passkey's signature count: ${registeredCount}, then ${count}`);
          });
          await noConsoleErrors(w);
        });
      }),
    );
  });
}
