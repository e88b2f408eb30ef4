// End-to-end tests of the account page's self-service, in Chromium, in
// cookie and header mode, on the demo started with -dev (the outbox at
// /dev/outbox.json) and -fresh-sign-in 4s, so that a sign-in goes stale
// within the test:
//
//   - changing the password with the current one: another browser
//     context signed in as the same user is signed out (its page shows
//     the signed-out view, its session is refused), this one goes on with
//     new tokens past its access token's expiry, the notice email is
//     sent, and only the new password signs in;
//   - deleting the account once the sign-in is stale: the library answers
//     403 st-fresh, the page asks for the password (a wrong one is told,
//     Cancel gives up), signs in again and deletes; the page shows the
//     signed-out view and the account no longer signs in;
//   - the other sensitive actions once stale, each asking for what the
//     account has, once its address is verified (-dev verifies; a passkey
//     or an app asked for before is refused, and the page mails the link
//     and says so): removing a passkey that is a second factor (the SDK's
//     call gets the 403) asks for the passkey, adding an authenticator
//     app with no second factor left asks for the password, and new
//     recovery codes ask for the app's code; a factor completed again
//     keeps the same session;
//   - a user who signs in with codes adds a password, which then signs in;
//   - changing the account's email once stale: the page asks for the
//     password, the link goes to the new address, whose page makes the
//     change after a click; the notice to the old address undoes it,
//     which signs every session out, and the old address signs in again.
//
// The page logs no console errors, and the demo refuses nothing but the
// 401s and the 403 that these steps expect.
//
//	cd e2e && npm ci && node --test demo-selfservice.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  ACCESS_TTL_MS,
  TEST_TIMEOUT,
  accountPage,
  apiMe,
  assertText,
  launch,
  listedSessions,
  open,
  session,
  signedInAs,
  signedOutUI,
  sleep,
  startDemo,
  totp,
  virtualAuthenticator,
} from "./helpers.mjs";

const PASSWORD = "correct horse 1";
const NEW_PASSWORD = "battery staple 2";
const FRESH_MS = 4000;
const STEP_MS = 30_000;
// FRESH_PATHS are the routes these steps send with a stale sign-in (or,
// for /auth/totp/device, before the address is verified).
const FRESH_PATHS = ["/auth/user/delete", "/auth/webauthn/credential/remove", "/auth/totp/device", "/auth/mfa/recovery-codes", "/auth/user/email/change"];

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

// ---- page actions ------------------------------------------------------------

async function passwordForm(page, base, button, email, password, query) {
  await open(page, base + "/" + query);
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", password);
  await page.click(button);
}

async function signUp(page, base, email, query) {
  await passwordForm(page, base, "#signup", email, PASSWORD, query);
  await signedInAs(page, email);
}

async function signIn(page, base, email, password, query) {
  await passwordForm(page, base, "#signin", email, password, query);
  await signedInAs(page, email);
}

// signInRefused asserts that the sign-in form refuses email and password.
async function signInRefused(page, base, email, password, query) {
  await passwordForm(page, base, "#signin", email, password, query);
  await assertText(page, "#status", "Wrong email or password.");
  await signedOutUI(page);
}

// mails lists the outbox's emails to `to`, oldest first.
async function mails(base, to) {
  const res = await fetch(base + "/dev/outbox.json");
  assert.equal(res.status, 200);
  const { emails } = await res.json();
  return emails.filter((m) => m.to === to).sort((a, b) => a.id - b.id);
}

// mailWith waits for the email to `to` with subject, and returns it.
async function mailWith(base, to, subject) {
  for (let i = 0; i < 50; i++) {
    const sent = (await mails(base, to)).find((m) => m.subject === subject);
    if (sent) return sent;
    await sleep(100);
  }
  assert.fail(`no "${subject}" email to ${to} in the outbox`);
}

async function focused(page) {
  return page.evaluate(() => document.activeElement && document.activeElement.id);
}

// consoleErrors collects the console errors of page and the demo's
// refusals, but for those the steps expect: 401 (an access token past
// its 3 seconds before the SDK refreshes it, the old session's
// refusals), the 403s on the routes that ask for a fresh sign-in, and the
// browser's own ask for the favicon, which the demo has not. Chromium
// logs each refusal as a console error, "Failed to load resource": those
// are checked by their answers.
function consoleErrors(page) {
  const errors = [];
  page.on("console", (m) => {
    if (m.type() !== "error" || m.text().startsWith("Failed to load resource: the server responded with a status of")) return;
    errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("response", (res) => {
    const status = res.status();
    const path = new URL(res.url()).pathname;
    if (
      status < 400 ||
      status === 401 ||
      (status === 403 && FRESH_PATHS.includes(path)) ||
      (status === 404 && path === "/favicon.ico")
    ) {
      return;
    }
    errors.push(`${res.request().method()} ${path}: ${status}`);
  });
  return errors;
}

// answers records the status of each POST to path, but for the 401s
// after which the SDK refreshes the session and sends it again (the
// access token lives 3 seconds, less than the wait for a stale sign-in).
function answers(page, path) {
  const statuses = [];
  page.on("response", (res) => {
    if (res.request().method() === "POST" && new URL(res.url()).pathname === path && res.status() !== 401) {
      statuses.push(res.status());
    }
  });
  return statuses;
}

// openVerificationLink opens the verification link mailed to email in a
// new tab of page's browser, which verifies the address, and closes it.
async function openVerificationLink(page, base, email) {
  const sent = await mailWith(base, email, "Verify your email");
  const tab = await page.context().newPage();
  try {
    await open(tab, sent.links.find((l) => l.includes("/auth/verify-email?token=")));
    await assertText(tab, "#status", "Your email is verified.");
  } finally {
    await tab.close();
  }
}

// ---- the tests ---------------------------------------------------------------

describe("account page, the password and deleting the account", { timeout: 8 * TEST_TIMEOUT }, () => {
  let demo, browser, base;
  before(async () => {
    demo = await startDemo(["-dev", "-fresh-sign-in", `${FRESH_MS / 1000}s`]);
    base = `http://localhost:${demo.port}`;
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  for (const mode of ["cookie", "header"]) {
    const query = mode === "header" ? "?mode=header" : "";

    test(`${mode} mode: change the password; the other device is signed out, this one goes on`, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `selfservice-password-${mode}`, async ({ page, step }) => {
        const email = newEmail(`password-${mode}`);
        const errors = consoleErrors(page);
        const other = await browser.newContext();
        try {
          const otherPage = await other.newPage();
          const otherErrors = consoleErrors(otherPage);
          await step("sign up", () => signUp(page, base, email, query));
          await step("sign in elsewhere, its account page", async () => {
            await signIn(otherPage, base, email, PASSWORD, query);
            await accountPage(otherPage);
            await listedSessions(otherPage, 2);
          });
          await step("account page", async () => {
            await accountPage(page);
            if (mode === "header") await assertText(page, "#mode", "Token transfer: header");
            await listedSessions(page, 2);
            await assertText(page, "#account-password-submit", "Change password");
            assert.equal(await page.locator("#account-old-password").isVisible(), true);
          });
          await step("a wrong current password is refused", async () => {
            await page.fill("#account-old-password", "not my password 3");
            await page.fill("#account-new-password", NEW_PASSWORD);
            await page.click("#account-password-submit");
            await assertText(page, "#account-old-password-error", "That is not your current password.");
            assert.equal(await page.locator("#account-old-password").getAttribute("aria-invalid"), "true");
            await listedSessions(page, 2);
          });
          await step("change it", async () => {
            await page.fill("#account-old-password", PASSWORD);
            await page.fill("#account-new-password", NEW_PASSWORD);
            await page.click("#account-password-submit");
            await assertText(page, "#status", "Your password was changed, and every other session was signed out.");
            assert.equal(await page.locator("#account-old-password-error").textContent(), "");
            assert.equal(await page.locator("#account-old-password").inputValue(), "");
            assert.equal(await page.locator("#account-new-password").inputValue(), "");
            await listedSessions(page, 1);
            assert.match((await page.locator("#account-sessions li").allTextContents())[0], /this device/);
          });
          await step("the other page shows it is signed out", async () => {
            await signedOutUI(otherPage);
            // By its live list of sessions, with no reload.
            await assertText(otherPage, "#status", "Your session was ended by the application.");
          });
          await step("the notice email", async () => {
            let sent;
            for (let i = 0; i < 50 && !sent; i++) {
              sent = (await mails(base, email)).find((m) => m.subject === "Your password was changed");
              if (!sent) await sleep(100);
            }
            assert.ok(sent, `no "Your password was changed" email to ${email} in the outbox`);
          });
          await step("past the access token: the other is refused, this one refreshes", async () => {
            await sleep(ACCESS_TTL_MS + 500);
            const theirs = await apiMe(otherPage, base);
            assert.equal(theirs.status, 401, theirs.body);
            const mine = await apiMe(page, base);
            assert.equal(mine.status, 200, mine.body);
            assert.equal(JSON.parse(mine.body).email, email);
            // Its live list connected again under the new session,
            // rather than show the signed-out view.
            assert.equal(await page.locator("#account").isVisible(), true);
            await listedSessions(page, 1);
          });
          await step("this page is still signed in after a reload", async () => {
            await page.reload();
            await page.locator("#account").waitFor({ state: "visible" });
            await listedSessions(page, 1);
          });
          await step("the old password no longer signs in", () => signInRefused(otherPage, base, email, PASSWORD, query));
          await step("the new one does", async () => {
            await signIn(otherPage, base, email, NEW_PASSWORD, query);
            await page.reload();
            await page.locator("#account").waitFor({ state: "visible" });
            await listedSessions(page, 2);
          });
          await step("no console errors", () => {
            assert.deepEqual(errors, []);
            assert.deepEqual(otherErrors, []);
          });
        } finally {
          await other.close().catch(() => {});
        }
      }),
    );

    test(`${mode} mode: delete the account, signing in again once the sign-in is stale`, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `selfservice-delete-${mode}`, async ({ page, step }) => {
        const email = newEmail(`delete-${mode}`);
        const errors = consoleErrors(page);
        const deletes = answers(page, "/auth/user/delete");
        await step("sign up", () => signUp(page, base, email, query));
        await step("account page", () => accountPage(page));
        await step("not confirmed: nothing is sent", async () => {
          page.once("dialog", (d) => d.dismiss());
          await page.click("#account-delete");
          await sleep(300);
          assert.deepEqual(deletes, []);
          assert.equal(await page.locator("#account").isVisible(), true);
        });
        await step("the sign-in goes stale", () => sleep(FRESH_MS + 1000));
        await step("delete: the page asks for the password", async () => {
          page.once("dialog", (d) => d.accept());
          await page.click("#account-delete");
          await page.locator("#account-reauth").waitFor({ state: "visible" });
          assert.deepEqual(deletes, [403]);
          assert.equal(await focused(page), "account-reauth-password");
        });
        await step("cancel: still signed in", async () => {
          await page.click("#account-reauth-cancel");
          await page.locator("#account-reauth").waitFor({ state: "hidden" });
          assert.equal(await page.locator("#account").isVisible(), true);
          await listedSessions(page, 1);
          const me = await apiMe(page, base);
          assert.equal(me.status, 200, me.body);
        });
        await step("delete again: a wrong password is told", async () => {
          page.once("dialog", (d) => d.accept());
          await page.click("#account-delete");
          await page.locator("#account-reauth").waitFor({ state: "visible" });
          assert.deepEqual(deletes, [403, 403]);
          await page.fill("#account-reauth-password", "not my password 3");
          await page.getByRole("button", { name: "Sign in again" }).click();
          await assertText(page, "#account-reauth-password-error", "That is not your password.");
          assert.equal(await page.locator("#account-reauth").isVisible(), true);
        });
        await step("the password: signed in again, deleted", async () => {
          await page.fill("#account-reauth-password", PASSWORD);
          await page.getByRole("button", { name: "Sign in again" }).click();
          await signedOutUI(page);
          await assertText(page, "#status", "Your account was deleted.");
          assert.deepEqual(deletes, [403, 403, 200]);
        });
        await step("the session is gone", async () => {
          const me = await apiMe(page, base);
          assert.equal(me.status, 401, me.body);
          await page.reload();
          await page.locator("#loading").waitFor({ state: "hidden" });
          await signedOutUI(page);
        });
        await step("the account no longer signs in", () => signInRefused(page, base, email, PASSWORD, query));
        await step("no console errors", () => assert.deepEqual(errors, []));
      }),
    );
    test(`${mode} mode: once stale, the page asks for a passkey, the password or the app's code, as the account has`, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `selfservice-factors-${mode}`, async ({ page, step }) => {
        const email = newEmail(`factors-${mode}`);
        const errors = consoleErrors(page);
        const removes = answers(page, "/auth/webauthn/credential/remove");
        const devices = answers(page, "/auth/totp/device");
        const codeSets = answers(page, "/auth/mfa/recovery-codes");
        const authenticator = await virtualAuthenticator(page);
        await step("sign up", () => signUp(page, base, email, query));
        await step("account page", () => accountPage(page));
        await step("add an authenticator app before verifying: the page asks for that first", async () => {
          await page.click("#totp-add");
          await assertText(page, "#mfa-manage-error", `Verify your email address first: a link is on its way to ${email}.`);
          assert.deepEqual(devices, [403]);
          assert.equal(await page.locator("#account").isVisible(), true);
          await assertText(page, "#totp-devices", "None.");
        });
        await step("open the link", () => openVerificationLink(page, base, email));
        // What follows needs a sign-in under FRESH_MS old: reading the link
        // took some of this one's.
        await step("sign in again", async () => {
          await open(page, base + "/" + query);
          await page.click("#signout");
          await signedOutUI(page);
          await signIn(page, base, email, PASSWORD, query);
          await accountPage(page);
          await listedSessions(page, 1);
        });
        await step("add a passkey, a second factor too", async () => {
          await page.click("#account-passkey-add");
          await assertText(page, "#status", "Passkey added");
          assert.equal((await authenticator.credentials()).length, 1);
        });
        await step("the sign-in goes stale", () => sleep(FRESH_MS + 1000));
        await step("remove it: the SDK's call is refused, the page asks for the passkey", async () => {
          await page.getByRole("button", { name: "Remove Passkey 1" }).click();
          await page.locator("#account-reauth").waitFor({ state: "visible" });
          assert.deepEqual(removes, [403]);
          assert.equal(await page.locator("#account-reauth-password-row").isVisible(), false);
          assert.equal(await focused(page), "account-reauth-passkey");
        });
        await step("the passkey: the same session, removed", async () => {
          await page.getByRole("button", { name: "Use a passkey" }).click();
          await assertText(page, "#status", "Removed Passkey 1.");
          await assertText(page, "#account-passkey-list", "None.");
          assert.deepEqual(removes, [403, 200]);
          await page.locator("#account-reauth").waitFor({ state: "hidden" });
          await listedSessions(page, 1);
        });
        await step("stale again", () => sleep(FRESH_MS + 1000));
        const created = page.waitForResponse(
          (r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/auth/totp/device" && r.status() === 200,
        );
        await step("add an authenticator app: the page asks for the password", async () => {
          await page.click("#totp-add");
          await page.locator("#account-reauth").waitFor({ state: "visible" });
          assert.deepEqual(devices, [403, 403]);
          assert.equal(await focused(page), "account-reauth-password");
        });
        const secret = await step("the password, then the app's code", async () => {
          await page.fill("#account-reauth-password", PASSWORD);
          await page.getByRole("button", { name: "Sign in again" }).click();
          await page.locator("#mfa-setup").waitFor({ state: "visible" });
          assert.deepEqual(devices, [403, 403, 200]);
          const { secret } = await (await created).json();
          await page.fill("#mfa-code", totp(secret));
          await page.click("#mfa-verify");
          await page.locator("#recovery-new").waitFor({ state: "visible" });
          await page.click("#recovery-saved");
          await listedSessions(page, 1);
          return secret;
        });
        await step("stale once more", () => sleep(FRESH_MS + 1000));
        await step("new recovery codes: the page asks for the app's code", async () => {
          await page.click("#recovery-make");
          await page.locator("#account-reauth").waitFor({ state: "visible" });
          assert.deepEqual(codeSets, [200, 403]);
          assert.equal(await page.locator("#account-reauth-password-row").isVisible(), false);
          assert.equal(await focused(page), "account-reauth-code");
        });
        await step("a wrong code is told", async () => {
          await page.fill("#account-reauth-code", totp(secret) === "000000" ? "111111" : "000000");
          await page.getByRole("button", { name: "Verify" }).click();
          await assertText(page, "#account-reauth-code-error", "That is not the code your app shows.");
        });
        await step("the next code: the same session, new codes", async () => {
          await page.fill("#account-reauth-code", totp(secret, Date.now() + STEP_MS));
          await page.getByRole("button", { name: "Verify" }).click();
          await page.locator("#recovery-new").waitFor({ state: "visible" });
          assert.equal(await page.locator("#recovery-codes li").count(), 10);
          assert.deepEqual(codeSets, [200, 403, 200]);
          await listedSessions(page, 1);
        });
        await step("no console errors", () => assert.deepEqual(errors, []));
      }),
    );
    test(`${mode} mode: change the email, signing in again once stale, then undo it from the old address`, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `selfservice-email-${mode}`, async ({ page, step }) => {
        const email = newEmail(`email-${mode}`);
        const moved = newEmail(`moved-${mode}`);
        const errors = consoleErrors(page);
        const requests = answers(page, "/auth/user/email/change");
        await step("sign up", () => signUp(page, base, email, query));
        await step("account page", () => accountPage(page));
        await step("the sign-in goes stale", () => sleep(FRESH_MS + 1000));
        await step("ask for the new address: the page asks for the password", async () => {
          await page.fill("#account-new-email", moved);
          await page.click("#account-email-submit");
          await page.locator("#account-reauth").waitFor({ state: "visible" });
          assert.deepEqual(requests, [403]);
        });
        await step("the password: the link is on its way", async () => {
          await page.fill("#account-reauth-password", PASSWORD);
          await page.getByRole("button", { name: "Sign in again" }).click();
          await assertText(page, "#status", `A link is on its way to ${moved}`);
          assert.deepEqual(requests, [403, 200]);
        });
        const link = await step("the link, at the new address", async () => {
          const sent = await mailWith(base, moved, "Confirm your new email address");
          return sent.links.find((l) => l.includes("/auth/change-email?token="));
        });
        await step("open it: nothing moves before the click", async () => {
          await open(page, link);
          await page.locator("#email-change-confirm").waitFor({ state: "visible" });
          await page.click("#email-change-confirm");
          await assertText(page, "#status", `The email address of your account is now ${moved}.`);
        });
        await step("the account page shows it", async () => {
          await open(page, base + "/account" + query);
          await page.locator("#account").waitFor({ state: "visible" });
          await assertText(page, "#account-who", moved);
        });
        const undo = await step("the notice, at the old address", async () => {
          const sent = await mailWith(base, email, "The email address of your account was changed");
          return sent.links.find((l) => l.includes("/auth/undo-email-change?token="));
        });
        await step("undo it: every session is signed out", async () => {
          await open(page, undo);
          await page.click("#email-change-undo");
          await assertText(page, "#status", `${email} is the address of your account again`);
          const me = await apiMe(page, base);
          assert.equal(me.status, 401, me.body);
        });
        await step("the old address signs in again", () => signIn(page, base, email, PASSWORD, query));
        await step("no console errors", () => assert.deepEqual(errors, []));
      }),
    );
    test(`${mode} mode: a user without a password adds one, then signs in with it`, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `selfservice-add-password-${mode}`, async ({ page, step }) => {
        const email = newEmail(`add-password-${mode}`);
        const errors = consoleErrors(page);
        await step("passwordless sign-in", async () => {
          await open(page, base + "/" + query);
          await signedOutUI(page);
          await page.fill("#pwl-email", email);
          await page.click("#pwl-send");
          await page.locator("#pwl-code-form").waitFor({ state: "visible" });
          let sent;
          for (let i = 0; i < 100 && !sent?.code; i++) {
            sent = (await mails(base, email)).at(-1);
            if (!sent?.code) await sleep(100);
          }
          await page.fill("#pwl-code", sent.code);
          await page.click("#pwl-signin");
          await signedInAs(page, email);
        });
        await step("account page: add a password", async () => {
          await accountPage(page);
          await assertText(page, "#account-password-submit", "Add a password");
          assert.equal(await page.locator("#account-old-password").isVisible(), false);
          await page.fill("#account-new-password", NEW_PASSWORD);
          await page.click("#account-password-submit");
          await assertText(page, "#status", "Your password was added");
          await assertText(page, "#account-password-submit", "Change password");
        });
        await step("it signs in", async () => {
          const ctx = await browser.newContext();
          try {
            await signIn(await ctx.newPage(), base, email, NEW_PASSWORD, query);
          } finally {
            await ctx.close();
          }
        });
        await step("no console errors", () => assert.deepEqual(errors, []));
      }),
    );
  }
});
