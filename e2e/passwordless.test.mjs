// End-to-end tests of passwordless sign-in on the demo's page in Chromium,
// in cookie and header mode: the demo runs with -passwordless
// code-and-link, the page asks for a code through supertokens-web-js, and
// the code and link are read off the demo's standard output (the log
// mailer's "--- email" blocks). The link opens /auth/verify: at once in
// the browser that asked for it, after a click on Continue in another.
//
//	cd e2e && npm ci && CHROMIUM=$(command -v chromium) node --test passwordless.test.mjs
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

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

// passwordlessEmail waits until the demo has printed n passwordless emails
// to email and returns the nth (from 1): { code, link }, the six digits on
// a line of their own and the link to /auth/verify.
async function passwordlessEmail(demo, email, n = 1, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const found = [];
    for (const m of demo.stdout.matchAll(/--- email\n([\s\S]*?)\n---\n/g)) {
      if (!m[1].includes(`To: <${email}>`) || !m[1].includes("Subject: Your sign-in ")) continue;
      const code = m[1].match(/^\s+(\d{6})$/m);
      const link = m[1].match(/https?:\/\/\S+\/auth\/verify\?\S+/);
      found.push({ code: code && code[1], link: link && link[0] });
    }
    if (found.length >= n) return found[n - 1];
    if (Date.now() > deadline) throw new Error(`no passwordless email #${n} to ${email} in the demo's output:\n${demo.stdout}`);
    await sleep(100);
  }
}

// consumes counts the page's POSTs to /auth/signinup/code/consume.
function countConsumes(page) {
  const seen = [];
  page.on("request", (r) => {
    if (r.method() === "POST" && new URL(r.url()).pathname === "/auth/signinup/code/consume") seen.push(r.url());
  });
  return seen;
}

// askForCode asks for a code on the signed-out page.
async function askForCode(page, email) {
  await signedOutUI(page);
  await page.locator("#passwordless").waitFor({ state: "visible" });
  await assertText(page, "#pwl-send", "Email me a sign-in code");
  await page.fill("#pwl-email", email);
  await page.click("#pwl-send");
  await assertText(page, "#status", `A sign-in code is on its way to ${email}.`);
  await page.locator("#pwl-code-form").waitFor({ state: "visible" });
  await assertText(page, "#pwl-sent", `Enter the code we emailed to ${email}, or open the link in that email.`);
}

async function typeCode(page, code) {
  await page.fill("#pwl-code", code);
  await page.click("#pwl-signin");
}

// meIs checks that /api/me, asked from the page, names email.
async function meIs(page, api, email) {
  const me = await apiMe(page, api);
  assert.equal(me.status, 200, me.body);
  assert.equal(JSON.parse(me.body).email, email);
  return JSON.parse(me.body).userId;
}

for (const mode of ["cookie", "header"]) {
  describe(`passwordless sign-in, ${mode} mode`, { timeout: 8 * TEST_TIMEOUT }, () => {
    let demo, browser, home;
    before(async () => {
      demo = await startDemo(["-passwordless", "code-and-link"]);
      browser = await launch();
      home = mode === "header" ? `${demo.url}/?mode=header` : `${demo.url}/`;
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await demo?.stop();
    });

    // otherBrowser opens a second browser context, with no cookies or
    // storage of the first, in this mode (the link page keeps the mode the
    // sign-in page was last used in, in that browser).
    async function otherBrowser() {
      const other = await browser.newContext();
      other.setDefaultTimeout(10_000);
      const p = await other.newPage();
      if (mode === "header") await open(p, home);
      return { other, p };
    }

    test("sign up by code; /api/me shows the user", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `pwl-code-${mode}`, async ({ page, step }) => {
        const email = newEmail(`pwl-code-${mode}`);
        await step("open", async () => {
          await open(page, home);
          await assertText(page, "#features", "Passwordless: code and link");
          await assertText(page, "#mode", `Token transfer: ${mode}`);
        });
        await step("ask for a code", () => askForCode(page, email));
        const { code } = await step("read the code", () => passwordlessEmail(demo, email));
        await step("type it", async () => {
          await typeCode(page, code);
          await signedInAs(page, email);
          await assertText(page, "#status", "Account created.");
        });
        await step("api/me", () => meIs(page, demo.url, email));
        await step("reload: still signed in", async () => {
          await open(page, home);
          await signedInAs(page, email);
        });
        await step("sign out, sign in again by code", async () => {
          await page.click("#signout");
          await signedOutUI(page);
          await page.locator("#pwl-start-form").waitFor({ state: "visible" });
          await askForCode(page, email);
          const again = await passwordlessEmail(demo, email, 2);
          await typeCode(page, again.code);
          await signedInAs(page, email);
          await assertText(page, "#status", "Signed in.");
        });
      }),
    );

    test("a wrong code is told, with the attempts left; then the right one", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `pwl-wrong-${mode}`, async ({ page, step }) => {
        const email = newEmail(`pwl-wrong-${mode}`);
        await step("open", () => open(page, home));
        await step("ask for a code", () => askForCode(page, email));
        const { code } = await step("read the code", () => passwordlessEmail(demo, email));
        const wrong = code === "000000" ? "111111" : "000000";
        await step("wrong code", async () => {
          await typeCode(page, wrong);
          await assertText(page, "#pwl-error", "Wrong code. 4 attempts left.");
          assert.equal(await page.getAttribute("#pwl-code", "aria-invalid"), "true");
          assert.equal(await page.getAttribute("#pwl-error", "aria-live"), "polite");
          assert.equal(await page.locator("#signed-in").isVisible(), false);
        });
        await step("wrong again", async () => {
          await typeCode(page, wrong);
          await assertText(page, "#pwl-error", "Wrong code. 3 attempts left.");
        });
        await step("right code", async () => {
          await typeCode(page, code);
          await signedInAs(page, email);
        });
        await step("api/me", () => meIs(page, demo.url, email));
      }),
    );

    test("resend sends a new code that works, also after a reload", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `pwl-resend-${mode}`, async ({ page, step }) => {
        const email = newEmail(`pwl-resend-${mode}`);
        await step("open", () => open(page, home));
        await step("ask for a code", () => askForCode(page, email));
        const first = await step("read the first code", () => passwordlessEmail(demo, email, 1));
        await step("resend", async () => {
          await page.click("#pwl-resend");
          await assertText(page, "#status", `A new sign-in code is on its way to ${email}.`);
        });
        const second = await step("read the second code", () => passwordlessEmail(demo, email, 2));
        assert.notEqual(second.code, first.code, "the resent code is the first one");
        assert.notEqual(second.link, first.link, "the resent link is the first one");
        await step("reload: the code step again", async () => {
          await open(page, home);
          await signedOutUI(page);
          await page.locator("#pwl-code-form").waitFor({ state: "visible" });
          await assertText(page, "#pwl-sent", `Enter the code we emailed to ${email}`);
        });
        await step("the new code", async () => {
          await typeCode(page, second.code);
          await signedInAs(page, email);
        });
        await step("api/me", () => meIs(page, demo.url, email));
      }),
    );

    test("the link, opened in the browser that asked, signs in at once", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `pwl-link-same-${mode}`, async ({ context, page, step }) => {
        const email = newEmail(`pwl-link-same-${mode}`);
        await step("open", () => open(page, home));
        await step("ask for a code", () => askForCode(page, email));
        const { link } = await step("read the link", () => passwordlessEmail(demo, email));
        const u = new URL(link);
        assert.equal(u.origin + u.pathname, `${demo.url}/auth/verify`);
        assert.equal(u.searchParams.get("tenantId"), "public");
        assert.ok(u.searchParams.get("preAuthSessionId"));
        assert.ok(u.hash.length > 1, "the link has no code in its fragment");

        const tab = await context.newPage();
        const consumes = countConsumes(tab);
        await step("open the link in a second tab", async () => {
          await tab.goto(link);
          await signedInAs(tab, email);
          await assertText(tab, "#mode", `Token transfer: ${mode}`);
          assert.equal(await tab.locator("#pwl-link-continue").isVisible(), false);
          assert.equal(consumes.length, 1, "consume requests");
          // The spent link is off the address bar.
          assert.equal(new URL(tab.url()).pathname, "/");
          assert.equal(new URL(tab.url()).hash, "");
        });
        await step("api/me in the second tab", () => meIs(tab, demo.url, email));
        await step("the first tab, reloaded, is signed in", async () => {
          await tab.close();
          await open(page, home);
          await signedInAs(page, email);
          await meIs(page, demo.url, email);
        });
      }),
    );

    test("the link in another browser asks to continue, then signs that browser in", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `pwl-link-other-${mode}`, async ({ page, step }) => {
        const email = newEmail(`pwl-link-other-${mode}`);
        await step("open", () => open(page, home));
        await step("ask for a code", () => askForCode(page, email));
        const { code, link } = await step("read the email", () => passwordlessEmail(demo, email));

        const { other, p } = await otherBrowser();
        try {
          const consumes = countConsumes(p);
          await step("open the link elsewhere: Continue, nothing spent", async () => {
            await p.goto(link);
            await p.locator("#pwl-link").waitFor({ state: "visible" });
            await p.locator("#pwl-link-continue").waitFor({ state: "visible" });
            await assertText(p, "#pwl-link-ask", "Continue to sign in here.");
            await assertText(p, "#mode", `Token transfer: ${mode}`);
            await sleep(300);
            assert.equal(consumes.length, 0, "the page spent the link before the click");
            const me = await apiMe(p, demo.url);
            assert.equal(me.status, 401, me.body);
          });
          await step("continue", async () => {
            await p.click("#pwl-link-continue");
            await signedInAs(p, email);
            assert.equal(consumes.length, 1, "consume requests");
          });
          await step("api/me in the other browser", () => meIs(p, demo.url, email));
        } finally {
          await other.close();
        }

        // The sign-in ended the attempt: its code no longer works in the
        // first browser, which starts again.
        await step("the first browser's code: restart", async () => {
          await typeCode(page, code);
          await assertText(page, "#pwl-error", "This sign-in attempt has ended");
          await page.locator("#pwl-start-form").waitFor({ state: "visible" });
          assert.equal(await page.locator("#pwl-code-form").isVisible(), false);
          assert.equal(await page.inputValue("#pwl-email"), email);
        });
      }),
    );

    test("a link used once is refused, with a way back to the start", { timeout: TEST_TIMEOUT }, () =>
      session(browser, `pwl-link-replay-${mode}`, async ({ page, step }) => {
        const email = newEmail(`pwl-link-replay-${mode}`);
        await step("open", () => open(page, home));
        await step("ask for a code", () => askForCode(page, email));
        const { link } = await step("read the link", () => passwordlessEmail(demo, email));
        await step("use the link", async () => {
          await page.goto(link);
          await signedInAs(page, email);
        });

        const { other, p } = await otherBrowser();
        try {
          await step("the link again, elsewhere", async () => {
            await p.goto(link);
            await p.locator("#pwl-link-continue").waitFor({ state: "visible" });
            await p.click("#pwl-link-continue");
            await assertText(p, "#pwl-link-error", "This sign-in link has expired or was used already.");
            assert.equal(await p.getAttribute("#pwl-link-error", "aria-live"), "polite");
            assert.equal(await p.locator("#signed-in").isVisible(), false);
            const me = await apiMe(p, demo.url);
            assert.equal(me.status, 401, me.body);
          });
          await step("back to the start", async () => {
            await p.click("#pwl-link-home");
            await p.waitForURL((v) => v.pathname === "/");
            await p.locator("#loading").waitFor({ state: "hidden" });
            await signedOutUI(p);
            await p.locator("#pwl-start-form").waitFor({ state: "visible" });
          });
        } finally {
          await other.close();
        }
        // The sign-in there ended this browser's attempt: the link asks to
        // continue here too, and is refused.
        await step("the same browser, again", async () => {
          await page.goto(link);
          await page.locator("#pwl-link-continue").waitFor({ state: "visible" });
          await page.click("#pwl-link-continue");
          await assertText(page, "#pwl-link-error", "This sign-in link has expired or was used already.");
        });
      }),
    );
  });
}
