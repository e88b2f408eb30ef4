// End-to-end tests of email verification on the demo's page in Chromium:
// the demo runs with -email-verification required (and optional), the page
// reads the session's st-ev claim through supertokens-web-js, asks for a
// link, and the link, read off the demo's standard output, opens the
// verification page (/auth/verify-email) in another tab or another browser.
// The first tab then sees the claim turn true without signing in again.
//
//	cd e2e && npm ci && npm test
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  TEST_TIMEOUT,
  apiMe,
  assertText,
  launch,
  open,
  session,
  signedInAs,
  signedOutUI,
  sleep,
  startDemo,
} from "./helpers.mjs";

const PASSWORD = "correct horse 1";

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

// verificationLink waits for the verification email to email in the
// demo's output (the log mailer's "--- email" blocks) and returns its link.
async function verificationLink(demo, email, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const m of demo.stdout.matchAll(/--- email\n([\s\S]*?)\n---\n/g)) {
      if (!m[1].includes(`To: ${email}`) && !m[1].includes(`<${email}>`)) continue;
      const link = m[1].match(/https?:\/\/\S+\/auth\/verify-email\?\S+/);
      if (link) return link[0];
    }
    if (Date.now() > deadline) throw new Error(`no verification email to ${email} in the demo's output:\n${demo.stdout}`);
    await sleep(100);
  }
}

// claim is the session's st-ev claim as the SDK in the page reads it.
const claim = (page) => page.evaluate(() => window.authDemo.emailVerifiedClaim());

async function signUp(page, email) {
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", PASSWORD);
  await page.click("#signup");
  await signedInAs(page, email);
}

// unverified checks that the page shows the "Verify your email" notice and
// that the SDK's claim is false.
async function unverified(page) {
  await page.locator("#verify-notice").waitFor({ state: "visible" });
  assert.equal(await page.locator("#verified-notice").isVisible(), false);
  assert.equal(await claim(page), false, "st-ev claim");
}

async function askForLink(page, email) {
  await page.click("#verify-send");
  await assertText(page, "#status", `A verification link is on its way to ${email}.`);
}

// signIns counts the requests that would start a new session.
function countSignIns(page) {
  const seen = [];
  page.on("request", (r) => {
    const p = new URL(r.url()).pathname;
    if (r.method() === "POST" && ["/auth/signin", "/auth/signup", "/auth/signinup"].includes(p)) seen.push(p);
  });
  return seen;
}

for (const mode of ["cookie", "header"]) {
  describe(`email verification required, ${mode} mode`, { timeout: 3 * TEST_TIMEOUT }, () => {
    let demo, browser, home;
    before(async () => {
      demo = await startDemo(["-email-verification", "required"]);
      browser = await launch();
      home = mode === "header" ? `${demo.url}/?mode=header` : `${demo.url}/`;
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await demo?.stop();
    });

    test("unverified after sign-up, verified by the link in another tab", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `ev-required-${mode}`, async ({ context, page, step }) => {
        const email = newEmail(`ev-${mode}`);
        await step("open", async () => {
          await open(page, home);
          await assertText(page, "#features", "Email verification: required");
        });
        await step("sign up", () => signUp(page, email));
        const signIns = countSignIns(page);
        await step("unverified", () => unverified(page));
        await step("api/me refused", async () => {
          const me = await apiMe(page, demo.url);
          assert.equal(me.status, 403, me.body);
          const body = JSON.parse(me.body);
          assert.equal(body.message, "invalid claim");
          assert.equal(body.claimValidationErrors[0].id, "st-ev");
        });
        await step("reload: still signed in, still unverified", async () => {
          await open(page, home);
          await signedInAs(page, email);
          await unverified(page);
        });
        await step("send link", () => askForLink(page, email));
        await step("send again: cooldown", async () => {
          await page.click("#verify-send");
          await assertText(page, "#status", "A verification email was sent a moment ago");
        });
        const link = await step("read link", () => verificationLink(demo, email));
        const u = new URL(link);
        assert.equal(u.origin, demo.url);
        assert.equal(u.searchParams.get("tenantId"), "public");
        assert.ok(u.searchParams.get("token"));

        const tab = await context.newPage();
        await step("open link in a second tab", async () => {
          await open(tab, link);
          await tab.locator("#verify-email").waitFor({ state: "visible" });
          await assertText(tab, "#mode", `Token transfer: ${mode}`);
          await assertText(tab, "#status", "Your email is verified.");
          assert.equal(await claim(tab), true, "st-ev claim in the second tab");
        });
        await step("link used twice", async () => {
          await open(tab, link);
          await assertText(tab, "#status", "This verification link has expired or is invalid.");
        });
        await step("second tab back to the main page", async () => {
          await tab.click("#verify-email-home");
          await tab.waitForURL((v) => v.pathname === "/");
          await tab.locator("#loading").waitFor({ state: "hidden" });
          await signedInAs(tab, email);
          await tab.locator("#verified-notice").waitFor({ state: "visible" });
          await tab.close();
        });

        // The first tab has not reloaded: the SDK there reads the claim the
        // verification wrote, and the page shows it once it looks again
        // (on coming back to the tab, or the "check again" button).
        await step("first tab sees the claim turn true", async () => {
          await page.bringToFront();
          assert.equal(await claim(page), true, "st-ev claim in the first tab");
          await page.evaluate(() => document.getElementById("verify-check").click());
          await page.locator("#verified-notice").waitFor({ state: "visible" });
          assert.equal(await page.locator("#verify-notice").isVisible(), false);
          await signedInAs(page, email);
        });
        await step("api/me lets it through", async () => {
          const me = await apiMe(page, demo.url);
          assert.equal(me.status, 200, me.body);
          assert.deepEqual(
            { email: JSON.parse(me.body).email, emailVerified: JSON.parse(me.body).emailVerified },
            { email, emailVerified: true },
          );
        });
        await step("reload", async () => {
          await open(page, home);
          await signedInAs(page, email);
          await page.locator("#verified-notice").waitFor({ state: "visible" });
        });
        assert.deepEqual(signIns, [], "the page signed in again");
      }),
    );
  });
}

describe("email verification optional", { timeout: 3 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDemo(["-email-verification", "optional"]);
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  // The link opened in another browser, without a session: the page there
  // waits for a click, and the first browser learns of it from the server
  // (GET /auth/user/email/verify).
  test("link opened in another browser", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "ev-optional", async ({ page, step }) => {
      const email = newEmail("ev-optional");
      const home = `${demo.url}/`;
      await step("open", async () => {
        await open(page, home);
        await assertText(page, "#features", "Email verification: optional");
      });
      await step("sign up", () => signUp(page, email));
      const signIns = countSignIns(page);
      await step("unverified", () => unverified(page));
      await step("api/me answers, unverified", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 200, me.body);
        assert.equal(JSON.parse(me.body).emailVerified, false);
      });
      await step("send link", () => askForLink(page, email));
      const link = await step("read link", () => verificationLink(demo, email));

      const other = await browser.newContext();
      try {
        const p2 = await other.newPage();
        p2.setDefaultTimeout(10_000);
        await step("open link elsewhere", async () => {
          await open(p2, link);
          await p2.locator("#verify-email-confirm").waitFor({ state: "visible" });
          assert.equal(await p2.locator("#verify-email-done").isVisible(), false);
        });
        await step("confirm", async () => {
          await p2.click("#verify-email-confirm");
          await assertText(p2, "#status", "Your email is verified.");
        });
      } finally {
        await other.close();
      }

      await step("first browser checks again", async () => {
        const asked = page.waitForRequest(
          (r) => r.method() === "GET" && new URL(r.url()).pathname === "/auth/user/email/verify",
        );
        await page.evaluate(() => document.getElementById("verify-check").click());
        await asked;
        await page.locator("#verified-notice").waitFor({ state: "visible" });
        assert.equal(await claim(page), true, "st-ev claim");
        await assertText(page, "#status", "Your email is verified.");
      });
      await step("api/me says verified", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 200, me.body);
        assert.equal(JSON.parse(me.body).emailVerified, true);
      });
      assert.deepEqual(signIns, [], "the page signed in again");
    }),
  );
});
