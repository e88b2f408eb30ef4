// End-to-end tests of passwordless sign-in with the prebuilt UI of
// supertokens-auth-react (e2e/authreact: a React app bundled with esbuild)
// against the demo, in Chromium. The app is served on its own port, so
// every call to the demo is cross-origin (-allowed-origin), and the demo's
// links point at the app (-app-url), whose /auth/verify page consumes them.
// Codes and links are read off the demo's standard output.
//
//	cd e2e && npm ci && node --test authreact.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { mkdir, mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TEST_TIMEOUT, freePort, launch, session, sleep, startDemo } from "./helpers.mjs";
import { build } from "./authreact/build.mjs";
import { serveApp } from "./authreact/server.mjs";

// RESEND_GAP is the app's resendEmailOrSMSGapInSeconds: how long the code
// screen keeps its resend button disabled (auth-react's default is 15).
const RESEND_GAP = 3;

const shots = path.join(path.dirname(fileURLToPath(import.meta.url)), "screenshots");

// The English texts of the auth-react translation keys the tests look for
// (lib/build/passwordlessprebuiltui.js, defaultTranslationsPasswordless).
const T = {
  OTP_TITLE: "Enter OTP", // PWLESS_USER_INPUT_CODE_HEADER_TITLE
  OTP_SUBTITLE: "An OTP was sent to you at", // PWLESS_USER_INPUT_CODE_HEADER_SUBTITLE
  OTP_AND_LINK_SUBTITLE: "An OTP and a magic link was sent to you at", // ..._SUBTITLE_LINK
  LINK_SENT: "Link sent!", // PWLESS_LINK_SENT_RESEND_TITLE
  OTP_INVALID: "Invalid OTP", // GENERAL_ERROR_OTP_INVALID
  RESEND: "Resend Email", // PWLESS_RESEND_BTN_EMAIL
  RESEND_WAIT: "Resend in", // PWLESS_RESEND_BTN_DISABLED_START
  RESENT: "Email resent", // PWLESS_RESEND_SUCCESS_EMAIL
  LINK_CONTINUE_TITLE: "Sign Up or Log In", // PWLESS_LINK_CLICKED_CONTINUE_HEADER
  LINK_INVALID: "Invalid magic link. Please try again.", // ERROR_SIGN_IN_UP_LINK (error=restart_link)
  CONSUME_RESTART: "Login unsuccessful. Please try again.", // ERROR_SIGN_IN_UP_CODE_CONSUME_RESTART_FLOW
};

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

let bundle;
let bundleDir;
before(async () => {
  bundleDir = await mkdtemp(path.join(os.tmpdir(), "auth-e2e-authreact-"));
  process.on("exit", () => rmSync(bundleDir, { recursive: true, force: true }));
  bundle = await build(bundleDir);
});

// startStack runs the demo with the passwordless flow and the app on its
// own port, the demo trusting the app's origin and linking to it.
async function startStack(flow, mode) {
  const appPort = await freePort();
  const appURL = `http://127.0.0.1:${appPort}`;
  const demo = await startDemo(["-passwordless", flow, "-app-url", appURL, "-allowed-origin", appURL]);
  const app = await serveApp(bundle, { apiDomain: demo.url, mode, resendGap: RESEND_GAP }, { port: appPort });
  return { demo, app };
}

// ---- the demo's output -------------------------------------------------------

// mails lists the passwordless emails to email in the demo's output, in
// the order sent, as { code, link } (either may be undefined).
function mails(demo, email) {
  const out = [];
  for (const m of demo.stdout.matchAll(/--- email\n([\s\S]*?)\n---\n/g)) {
    if (!m[1].includes(`To: ${email}`) && !m[1].includes(`<${email}>`)) continue;
    const code = m[1].match(/^ {4}(\d{6})$/m);
    const link = m[1].match(/https?:\/\/\S+\/auth\/verify\?\S+/);
    if (code || link) out.push({ code: code?.[1], link: link?.[0] });
  }
  return out;
}

// mail waits for the nth (from 1) passwordless email to email.
async function mail(demo, email, n = 1, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const all = mails(demo, email);
    if (all.length >= n) return all[n - 1];
    if (Date.now() > deadline) throw new Error(`no email #${n} to ${email} in the demo's output:\n${demo.stdout}`);
    await sleep(100);
  }
}

// ---- the page ----------------------------------------------------------------

// watch records a page's calls to the demo (request and answer) and its
// console errors, for failure messages and for the tests' own checks. The
// answer of a call the page navigates away after is often lost ("").
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
      .map((c) =>
        c.failed
          ? `${c.method} ${c.path} failed: ${c.failed}`
          : `${c.method} ${c.path} ${c.body ?? ""} -> ${c.status} ${c.answer}`.replace(/\s+/g, " "),
      )
      .join("\n    ");
  // settle waits for the answers of the calls made so far.
  const settle = () => Promise.all(pending);
  return { page, calls, errors, log, settle };
}

// watched runs fn and adds the demo calls and console errors of the
// watched pages to its error. session() takes the screenshot of the main
// page; the others' go next to it, named test--name.png.
async function watched(test, watches, fn) {
  try {
    return await fn();
  } catch (err) {
    await Promise.all(Object.values(watches).map((w) => w.settle()));
    for (const [name, w] of Object.entries(watches)) {
      if (name !== "page") {
        await mkdir(shots, { recursive: true });
        const file = path.join(shots, `${test}--${name}.png`.replace(/[^a-z0-9.-]+/gi, "_"));
        await w.page.screenshot({ path: file, fullPage: true, timeout: 5000 }).catch(() => {});
        err.message += `\n  ${name}: screenshot: ${file}`;
      }
      err.message += `\n  ${name}: calls to the demo:\n    ${w.log()}\n  ${name}: console errors:\n    ${w.errors.join("\n    ")}`;
    }
    throw err;
  }
}

// noConsoleErrors checks that the page logged no errors and that the
// demo refused nothing but the refreshes the SDK tries while signed out
// (401). Chromium logs every 4xx answer as an error ("Failed to load
// resource"): those are checked in the calls instead.
async function noConsoleErrors(w) {
  await w.settle();
  assert.deepEqual(
    w.errors.filter((e) => !e.startsWith("Failed to load resource: the server responded with a status of")),
    [],
    "console errors in the page",
  );
  const refused = w.calls.filter((c) => c.status >= 400 && !(c.status === 401 && c.path === "/auth/session/refresh"));
  assert.deepEqual(refused, [], "calls the demo refused");
}

// consumes lists the POST /auth/signinup/code/consume bodies sent so far.
const consumes = (w) =>
  w.calls.filter((c) => c.method === "POST" && c.path === "/auth/signinup/code/consume").map((c) => JSON.parse(c.body));

// ui finds an element of the prebuilt UI (in its shadow root, which
// Playwright's CSS locators pierce) by its data-supertokens name.
const ui = (page, name) => page.locator(`[data-supertokens~="${name}"]`);

// isAuthPage tells the sign-in page's URL (auth-react redirects to
// /auth/, with a slash).
const isAuthPage = (u) => u.pathname === "/auth" || u.pathname === "/auth/";

// openSignIn opens the app's home page while signed out: SessionAuth
// sends the browser to the sign-in page.
async function openSignIn(page, app) {
  await page.goto(app.url + "/");
  await page.waitForURL((u) => isAuthPage(u));
  await page.locator('input[name="email"]').waitFor({ state: "visible" });
}

// askForCode enters email on the sign-in page and continues.
async function askForCode(page, email) {
  await page.locator('input[name="email"]').fill(email);
  await page.locator('button[type="submit"]').click();
}

// codeScreen waits for the code-entry screen of the flow to email.
async function codeScreen(page, email, subtitle = T.OTP_SUBTITLE) {
  await ui(page, "headerTitle").filter({ hasText: T.OTP_TITLE }).waitFor({ state: "visible" });
  await ui(page, "headerSubtitle").filter({ hasText: subtitle }).waitFor({ state: "visible" });
  await page.getByText(email).first().waitFor({ state: "visible" });
  await page.locator('input[name="userInputCode"]').waitFor({ state: "visible" });
}

async function typeCode(page, code) {
  await page.locator('input[name="userInputCode"]').fill(code);
  await page.locator('button[type="submit"]').click();
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

// events lists the SDK's events that the app recorded (app.jsx), of the
// recipe and, if given, the action.
async function events(page, recipe, action) {
  const all = await page.evaluate(() => window.authReactApp.events());
  return all.filter((e) => e.recipe === recipe && (action === undefined || e.action === action));
}

// successes lists the passwordless SUCCESS events as [isNewRecipeUser,
// createdNewSession, userId].
const successes = async (page) =>
  (await events(page, "passwordless", "SUCCESS")).map((e) => [e.isNewRecipeUser, e.createdNewSession, e.userId]);

// sessionIs checks the access token payload the SDK reads: the user and
// the session handle, which auth-react compares to tell a new session.
async function sessionIs(page, userId) {
  const p = await page.evaluate(() => window.authReactApp.accessTokenPayload());
  assert.equal(p.sub, userId, "access token payload sub");
  assert.equal(typeof p.sessionHandle, "string", "access token payload sessionHandle");
  return p.sessionHandle;
}

// otherCode is a six-digit code other than code.
const otherCode = (code) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

// ---- the tests ---------------------------------------------------------------

for (const mode of ["cookie", "header"]) {
  describe(`auth-react passwordless, code, ${mode} mode`, { timeout: 5 * TEST_TIMEOUT }, () => {
    let demo, app, browser;
    before(async () => {
      ({ demo, app } = await startStack("code", mode));
      browser = await launch();
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await app?.close();
      await demo?.stop();
    });

    test("the emailed code signs up, and signs in again as the same user", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-code-${mode}`, async ({ page, step }) => {
        const w = watch(page, demo.url);
        await watched(`ar-code-${mode}`, { page: w }, async () => {
          const email = newEmail(`ar-code-${mode}`);
          await step("open", () => openSignIn(page, app));
          await step("ask for a code", () => askForCode(page, email));
          await step("code screen", () => codeScreen(page, email));
          const { code, link } = await step("read the code", () => mail(demo, email));
          assert.match(code, /^\d{6}$/);
          assert.equal(link, undefined, "a link in the email of the code flow");
          await step("type the code", () => typeCode(page, code));
          const userId = await step("signed in", () => signedIn(page, app, email));
          assert.equal(consumes(w).length, 1);
          assert.deepEqual(await successes(page), [[true, true, userId]]);
          const handle = await sessionIs(page, userId);
          await step("mode", async () => {
            await page.locator("#mode").filter({ hasText: `Token transfer: ${mode}` }).waitFor();
            const names = (await page.context().cookies()).map((c) => c.name);
            if (mode === "cookie") assert.ok(names.includes("sAccessToken"), `cookies: ${names}`);
            else assert.ok(!names.includes("sAccessToken"), `cookies: ${names}`);
          });
          await step("reload: still signed in", async () => {
            await page.reload();
            assert.equal(await signedIn(page, app, email), userId);
          });
          await step("sign out", async () => {
            await page.locator("#sign-out").click();
            await page.waitForURL((u) => isAuthPage(u));
            await page.locator('input[name="email"]').waitFor({ state: "visible" });
          });
          await step("sign in again", async () => {
            await askForCode(page, email);
            await codeScreen(page, email);
            const again = await mail(demo, email, 2);
            await typeCode(page, again.code);
            assert.equal(await signedIn(page, app, email), userId, "the same user");
          });
          assert.deepEqual(await successes(page), [
            [true, true, userId],
            [false, true, userId],
          ]);
          assert.notEqual(await sessionIs(page, userId), handle, "a new session");
          assert.deepEqual(
            (await events(page, "passwordless", "PASSWORDLESS_CODE_SENT")).map((e) => e.isResend),
            [false, false],
          );
          await noConsoleErrors(w);
        });
      }),
    );

    test("a wrong code shows the UI's invalid-code message, then the right one signs in", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-wrong-${mode}`, async ({ page, step }) => {
        const w = watch(page, demo.url);
        await watched(`ar-wrong-${mode}`, { page: w }, async () => {
          const email = newEmail(`ar-wrong-${mode}`);
          await step("open", () => openSignIn(page, app));
          await step("ask for a code", () => askForCode(page, email));
          await step("code screen", () => codeScreen(page, email));
          const { code } = await step("read the code", () => mail(demo, email));
          await step("wrong code", async () => {
            await typeCode(page, otherCode(code));
            await ui(page, "generalError").filter({ hasText: T.OTP_INVALID }).waitFor({ state: "visible" });
            // Still on the code screen, for the same address.
            await codeScreen(page, email);
          });
          const [wrong] = consumes(w);
          assert.equal(wrong.userInputCode, otherCode(code));
          await w.settle();
          const answer = JSON.parse(w.calls.find((c) => c.path === "/auth/signinup/code/consume").answer);
          assert.deepEqual(answer, {
            status: "INCORRECT_USER_INPUT_CODE_ERROR",
            failedCodeInputAttemptCount: 1,
            maximumCodeInputAttempts: 5,
          });
          await step("right code", () => typeCode(page, code));
          await step("signed in", () => signedIn(page, app, email));
          await noConsoleErrors(w);
        });
      }),
    );

    test("the fifth wrong code ends the flow: the UI starts over", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-fifth-${mode}`, async ({ page, step }) => {
        const w = watch(page, demo.url);
        await watched(`ar-fifth-${mode}`, { page: w }, async () => {
          const email = newEmail(`ar-fifth-${mode}`);
          await step("open", () => openSignIn(page, app));
          await step("ask for a code", () => askForCode(page, email));
          await step("code screen", () => codeScreen(page, email));
          const { code } = await step("read the code", () => mail(demo, email));
          for (let i = 1; i <= 4; i++) {
            await step(`wrong code ${i}`, async () => {
              const answered = page.waitForResponse((r) => r.url() === demo.url + "/auth/signinup/code/consume");
              await typeCode(page, otherCode(code));
              await answered;
              await ui(page, "generalError").filter({ hasText: T.OTP_INVALID }).waitFor({ state: "visible" });
              await codeScreen(page, email);
            });
          }
          await step("wrong code 5", async () => {
            await typeCode(page, otherCode(code));
            await ui(page, "generalError").filter({ hasText: T.CONSUME_RESTART }).waitFor({ state: "visible" });
            await page.locator('input[name="email"]').waitFor({ state: "visible" });
          });
          await w.settle();
          const answers = w.calls.filter((c) => c.path === "/auth/signinup/code/consume").map((c) => JSON.parse(c.answer));
          assert.deepEqual(
            answers.map((a) => [a.status, a.failedCodeInputAttemptCount]),
            [1, 2, 3, 4].map((n) => ["INCORRECT_USER_INPUT_CODE_ERROR", n]).concat([["RESTART_FLOW_ERROR", undefined]]),
          );
          assert.equal((await events(page, "passwordless", "PASSWORDLESS_RESTART_FLOW")).length, 1);
          await step("start again", async () => {
            await askForCode(page, email);
            await codeScreen(page, email);
            const again = await mail(demo, email, 2);
            await typeCode(page, again.code);
            await signedIn(page, app, email);
          });
          await noConsoleErrors(w);
        });
      }),
    );

    test("resend, once the UI allows it: the new code signs in", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-resend-${mode}`, async ({ page, step }) => {
        const w = watch(page, demo.url);
        await watched(`ar-resend-${mode}`, { page: w }, async () => {
          const email = newEmail(`ar-resend-${mode}`);
          await step("open", () => openSignIn(page, app));
          await step("ask for a code", () => askForCode(page, email));
          await step("code screen", () => codeScreen(page, email));
          const first = await step("read the code", () => mail(demo, email));
          const resend = ui(page, "resendCodeBtn");
          await step("resend gated", async () => {
            await resend.filter({ hasText: T.RESEND_WAIT }).waitFor({ state: "visible" });
            assert.equal(await resend.isDisabled(), true);
          });
          await step("resend", async () => {
            await resend.filter({ hasText: T.RESEND }).waitFor({ state: "visible", timeout: (RESEND_GAP + 5) * 1000 });
            await resend.click();
            await ui(page, "generalSuccess").filter({ hasText: T.RESENT }).waitFor({ state: "visible" });
          });
          const second = await step("read the new code", () => mail(demo, email, 2));
          await w.settle();
          const resends = w.calls.filter((c) => c.path === "/auth/signinup/code/resend");
          assert.equal(resends.length, 1);
          assert.deepEqual(JSON.parse(resends[0].answer), { status: "OK" });
          const created = JSON.parse(w.calls.find((c) => c.path === "/auth/signinup/code").answer);
          assert.deepEqual(
            { deviceId: JSON.parse(resends[0].body).deviceId, preAuthSessionId: JSON.parse(resends[0].body).preAuthSessionId },
            { deviceId: created.deviceId, preAuthSessionId: created.preAuthSessionId },
          );
          if (second.code === first.code) assert.fail(`the resent code is the first one: ${first.code}`);
          await step("type the new code", () => typeCode(page, second.code));
          const userId = await step("signed in", () => signedIn(page, app, email));
          assert.deepEqual(
            (await events(page, "passwordless", "PASSWORDLESS_CODE_SENT")).map((e) => e.isResend),
            [false, true],
          );
          assert.deepEqual(await successes(page), [[true, true, userId]]);
          await noConsoleErrors(w);
        });
      }),
    );
  });

  // Cookie mode runs the flow that sends both a code and a link, header
  // mode the one that sends only a link.
  const flow = mode === "cookie" ? "code-and-link" : "link";
  describe(`auth-react passwordless, ${flow}, ${mode} mode`, { timeout: 5 * TEST_TIMEOUT }, () => {
    let demo, app, browser;
    before(async () => {
      ({ demo, app } = await startStack(flow, mode));
      browser = await launch();
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await app?.close();
      await demo?.stop();
    });

    // linkSent waits for the screen that follows the email: the code
    // screen that mentions the link, or the link-sent screen.
    async function linkSent(page, email) {
      if (flow === "code-and-link") {
        await codeScreen(page, email, T.OTP_AND_LINK_SUBTITLE);
        return;
      }
      await page.getByText(T.LINK_SENT).waitFor({ state: "visible" });
      await page.getByText(email).first().waitFor({ state: "visible" });
      assert.equal(await page.locator('input[name="userInputCode"]').count(), 0);
    }

    // startFlow asks for a link on page and returns the email's link.
    async function startFlow(page, step, email) {
      await step("open", () => openSignIn(page, app));
      await step("ask for a link", () => askForCode(page, email));
      await step("link sent", () => linkSent(page, email));
      const { code, link } = await step("read the link", () => mail(demo, email));
      assert.equal(code === undefined, flow === "link", `code ${code} in the ${flow} flow`);
      const u = new URL(link);
      assert.equal(u.origin, app.url, "the link's origin");
      assert.equal(u.pathname, "/auth/verify");
      assert.equal(u.searchParams.get("tenantId"), "public");
      assert.ok(u.searchParams.get("preAuthSessionId"));
      assert.ok(u.hash.length > 1, "a link code in the fragment");
      return link;
    }

    test("the link opened in the same browser signs in without a click", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-link-same-${mode}`, async ({ page, step }) => {
        const w = watch(page, demo.url);
        await watched(`ar-link-same-${mode}`, { page: w }, async () => {
          const email = newEmail(`ar-link-same-${mode}`);
          const link = await startFlow(page, step, email);
          await step("open the link", () => page.goto(link));
          const userId = await step("signed in", () => signedIn(page, app, email));
          assert.deepEqual(await successes(page), [[true, true, userId]]);
          await sessionIs(page, userId);
          const [consumed] = consumes(w);
          assert.deepEqual(Object.keys(consumed).sort(), ["linkCode", "preAuthSessionId", "shouldTryLinkingWithSessionUser"]);
          assert.equal(consumed.linkCode, new URL(link).hash.slice(1));
          await noConsoleErrors(w);
        });
      }),
    );

    test("the link opened in another browser asks for a click, then signs in", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-link-other-${mode}`, async ({ context, page, step }) => {
        const w = watch(page, demo.url);
        const other = await browser.newContext();
        try {
          const p2 = await other.newPage();
          p2.setDefaultTimeout(10_000);
          const w2 = watch(p2, demo.url);
          await watched(`ar-link-other-${mode}`, { page: w, other: w2 }, async () => {
            const email = newEmail(`ar-link-other-${mode}`);
            const link = await startFlow(page, step, email);
            await step("open the link elsewhere", async () => {
              await p2.goto(link);
              await ui(p2, "headerTitle").filter({ hasText: T.LINK_CONTINUE_TITLE }).waitFor({ state: "visible" });
              await sleep(500);
              assert.deepEqual(consumes(w2), [], "consumed before the click");
            });
            await step("continue", () => ui(p2, "continueButtonWrapper").locator("button").click());
            const userId = await step("signed in elsewhere", () => signedIn(p2, app, email));
            assert.equal(consumes(w2).length, 1);
            assert.deepEqual(await successes(p2), [[true, true, userId]]);
            await sessionIs(p2, userId);
            if (flow === "code-and-link") {
              // The flow is spent: the code in the first browser starts
              // it over.
              const { code } = await mail(demo, email);
              await step("the code after the link", async () => {
                await typeCode(page, code);
                await ui(page, "generalError").filter({ hasText: T.CONSUME_RESTART }).waitFor({ state: "visible" });
                await page.locator('input[name="email"]').waitFor({ state: "visible" });
              });
            }
            assert.equal((await context.cookies()).some((c) => c.name === "sAccessToken"), false);
            await noConsoleErrors(w);
            await noConsoleErrors(w2);
          });
        } finally {
          await other.close();
        }
      }),
    );

    test("a link used twice sends the browser back to sign in with the UI's link error", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ar-link-twice-${mode}`, async ({ page, step }) => {
        const w = watch(page, demo.url);
        const other = await browser.newContext();
        try {
          const p2 = await other.newPage();
          p2.setDefaultTimeout(10_000);
          const w2 = watch(p2, demo.url);
          await watched(`ar-link-twice-${mode}`, { page: w, other: w2 }, async () => {
            const email = newEmail(`ar-link-twice-${mode}`);
            const link = await startFlow(page, step, email);
            await step("open the link", () => page.goto(link));
            await step("signed in", () => signedIn(page, app, email));
            await step("open it again elsewhere", async () => {
              await p2.goto(link);
              await ui(p2, "headerTitle").filter({ hasText: T.LINK_CONTINUE_TITLE }).waitFor({ state: "visible" });
              await ui(p2, "continueButtonWrapper").locator("button").click();
            });
            await step("back to sign in", async () => {
              await p2.waitForURL((u) => isAuthPage(u) && u.searchParams.get("error") === "restart_link");
              await ui(p2, "generalError").filter({ hasText: T.LINK_INVALID }).waitFor({ state: "visible" });
              await p2.locator('input[name="email"]').waitFor({ state: "visible" });
            });
            assert.equal((await other.cookies()).some((c) => c.name === "sAccessToken"), false);
            await noConsoleErrors(w);
            await noConsoleErrors(w2);
          });
        } finally {
          await other.close();
        }
      }),
    );
  });
}
