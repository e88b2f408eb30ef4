// End-to-end test of the newcomer's first run, in Chromium: the demo
// started as the README says, `go run ./examples/demo -dev` (with a memory
// store and a free port), opened at the http://localhost URL it prints.
// Every sign-in method completes: the development OpenID provider through
// its own page, a passwordless code read on the outbox page, a passkey
// with Chromium's virtual authenticator, and a password with a TOTP code
// after an authenticator app was added on the account page (the code
// computed from the key the page shows, as an authenticator app does). The provider's page and the outbox fit a phone's width.
// -dev verifies email addresses (optional): an authenticator app or a
// passkey is added only once the link from the outbox is opened, and the
// page says so, and mails the link, when asked before.
//
//	cd e2e && npm ci && node --test demo-dev.test.mjs
//
// With SCREENSHOTS=1 it also writes the screenshots the README links to,
// at desktop (1280x800) and phone (390x844) width, into
// examples/demo/screenshots/.
//
// Needs Go and Chromium (CHROMIUM, default /usr/bin/chromium).
// Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  TEST_TIMEOUT,
  apiMe,
  assertText,
  freePort,
  launch,
  open,
  session,
  signedInAs,
  signedOutUI,
  sleep,
  virtualAuthenticator,
  totp,
} from "./helpers.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const screenshotDir = path.join(repo, "examples", "demo", "screenshots");
const SCREENSHOTS = process.env.SCREENSHOTS === "1";
const PASSWORD = "correct horse 1";
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${++seq}@example.com`;

// startDevDemo runs the README's command, `go run ./examples/demo -dev`,
// from the repository's root, with a memory store on a free loopback
// port, and waits for the URL it says to open. go run compiles first, so
// it may take a while. The process group is stopped at the end.
async function startDevDemo(extra = []) {
  const port = await freePort();
  const args = ["run", "./examples/demo", "-dev", "-db", "memory", "-addr", `127.0.0.1:${port}`, ...extra];
  const proc = spawn("go", args, { cwd: repo, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const d = { proc, stdout: "", stderr: "" };
  proc.stdout.setEncoding("utf8").on("data", (s) => (d.stdout += s));
  proc.stderr.setEncoding("utf8").on("data", (s) => (d.stderr += s));
  d.stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    try {
      process.kill(-proc.pid, "SIGTERM"); // go run and the demo it started
    } catch {}
    const t = setTimeout(() => {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {}
    }, 5000);
    await once(proc, "exit").catch(() => {});
    clearTimeout(t);
  };
  const deadline = Date.now() + 240_000;
  let m;
  while (!(m = d.stdout.match(/^demo: open (http:\/\/localhost:\d+)$/m))) {
    if (proc.exitCode !== null) throw new Error(`demo -dev exited ${proc.exitCode}: ${d.stderr}`);
    if (Date.now() > deadline) {
      await d.stop();
      throw new Error(`demo -dev did not start: ${d.stdout}${d.stderr}`);
    }
    await sleep(100);
  }
  d.url = m[1];
  assert.equal(d.url, `http://localhost:${port}`, "the URL -dev prints to open");
  return d;
}

// shoot saves page at desktop and phone width as examples/demo/screenshots/
// <name>-desktop.png and <name>-phone.png, with SCREENSHOTS=1, and checks
// that the page does not scroll sideways on a phone, 360 px wide.
async function shoot(page, name) {
  const size = page.viewportSize();
  try {
    await page.setViewportSize({ width: 360, height: 740 });
    await fitsWidth(page);
    await page.setViewportSize(PHONE);
    if (!SCREENSHOTS) return;
    await mkdir(screenshotDir, { recursive: true });
    await page.screenshot({ path: path.join(screenshotDir, `${name}-phone.png`), fullPage: true });
    await page.setViewportSize(DESKTOP);
    await page.screenshot({ path: path.join(screenshotDir, `${name}-desktop.png`), fullPage: true });
  } finally {
    await page.setViewportSize(size);
  }
}

async function fitsWidth(page) {
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(wide <= 0, `${page.url()}: ${wide}px wider than the screen`);
}

assert.equal(totp("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", 59_000), "287082");

// ---- page actions -----------------------------------------------------------

// passwordForm signs up or in (button, "#signup" or "#signin") with the
// password form, from the signed-out page; a sign-up lands signed in.
async function passwordForm(page, button, email) {
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", PASSWORD);
  await page.click(button);
  if (button === "#signup") await signedInAs(page, email);
}

async function signOut(page) {
  await page.click("#signout");
  await signedOutUI(page);
}

// verifyFromOutbox opens the verification link mailed to email from the
// outbox page, in a new tab of page's browser, as a user would, and
// waits until it says the address is verified.
async function verifyFromOutbox(page, url, email) {
  const outbox = await page.context().newPage();
  try {
    await outbox.goto(`${url}/dev/outbox`);
    const mail = outbox.locator("article").filter({ hasText: email }).filter({ hasText: "Verify your email" }).first();
    // The outbox reloads itself when the email arrives.
    await mail.waitFor({ state: "visible", timeout: 15_000 });
    const [tab] = await Promise.all([
      page.context().waitForEvent("page"),
      mail.getByRole("link").filter({ hasText: "/auth/verify-email?" }).click(),
    ]);
    await tab.locator("#verify-email").waitFor({ state: "visible" });
    await assertText(tab, "#status", "Your email is verified.");
    await tab.close();
  } finally {
    await outbox.close();
  }
}

// askForLink asks for a verification link from the signed-in view.
async function askForLink(page, email) {
  await page.click("#verify-send");
  await assertText(page, "#status", `A verification link is on its way to ${email}.`);
}

// devProviderPage clicks "Sign in with Dev provider" and waits for the
// provider's page.
async function devProviderPage(page, url) {
  await signedOutUI(page);
  await page.getByRole("button", { name: "Sign in with Dev provider" }).click();
  await page.waitForURL((u) => u.href.startsWith(`${url}/dev/oidc/authorize?`));
  await assertText(page, ".dev", "Development only.");
}

// ---- the test ---------------------------------------------------------------

describe("go run ./examples/demo -dev", { timeout: 10 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDevDemo();
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  test("the page offers every sign-in method, in development mode", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "dev-signed-out", async ({ page, step }) => {
      await page.setViewportSize(DESKTOP);
      await step("open", () => open(page, demo.url));
      await step("every method", async () => {
        await signedOutUI(page);
        await page.getByRole("button", { name: "Sign in with Dev provider" }).waitFor({ state: "visible" });
        await page.locator("#passwordless").waitFor({ state: "visible" });
        await page.locator("#passkeys").waitFor({ state: "visible" });
        await page.locator("#auth-form").waitFor({ state: "visible" });
        const config = await page.evaluate(async () => (await fetch("/api/config")).json());
        assert.equal(config.dev, true);
      });
      await step("screenshots", () => shoot(page, "signin"));
    }),
  );

  test("sign in with the development provider, then again as the identity it remembers", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "dev-provider", async ({ page, step }) => {
      const email = newEmail("dev-provider");
      await page.setViewportSize(DESKTOP);
      await step("open", () => open(page, demo.url));
      await step("provider page", () => devProviderPage(page, demo.url));
      await step("provider page screenshots", () => shoot(page, "devprovider"));
      await step("labels", async () => {
        await page.getByLabel("Email", { exact: true }).waitFor({ state: "visible" });
        await page.getByLabel(/^Name/).waitFor({ state: "visible" });
        assert.equal(await page.getByLabel("The provider vouches for this email (email_verified)").isChecked(), true);
      });
      await step("a bad email is announced", async () => {
        await page.getByLabel("Email", { exact: true }).fill("not-an-email");
        await page.getByLabel("Email", { exact: true }).evaluate((e) => (e.type = "text")); // past the browser's own check
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await assertText(page, "[role=alert]", "Enter an email address");
        assert.equal(await page.getByLabel("Email", { exact: true }).getAttribute("aria-invalid"), "true");
      });
      await step("sign in as a typed identity", async () => {
        await page.getByLabel("Email", { exact: true }).fill(email);
        await page.getByLabel(/^Name/).fill("Ada Lovelace");
        await page.getByRole("button", { name: "Sign in", exact: true }).click();
        await signedInAs(page, email);
      });
      const me = await apiMe(page, demo.url);
      assert.equal(me.status, 200, me.body);
      const { userId, emailVerified } = JSON.parse(me.body);
      assert.equal(emailVerified, true, "the provider vouched for the email");
      await step("sign out", () => signOut(page));
      await step("provider page again", () => devProviderPage(page, demo.url));
      await step("pick the remembered identity", async () => {
        await page.getByRole("button", { name: new RegExp(`Ada Lovelace <${email}> — email verified`) }).click();
        await signedInAs(page, email);
      });
      assert.equal(JSON.parse((await apiMe(page, demo.url)).body).userId, userId, "the same user");
    }),
  );

  test("passwordless: the code read on the outbox page", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "dev-passwordless", async ({ context, page, step }) => {
      const email = newEmail("dev-pwl");
      await page.setViewportSize(DESKTOP);
      await step("open", () => open(page, demo.url));
      // The outbox is open before the email is sent: it reloads itself
      // when one arrives.
      const outbox = await context.newPage();
      await step("open the outbox", async () => {
        await outbox.setViewportSize(DESKTOP);
        await outbox.goto(`${demo.url}/dev/outbox`);
        await outbox.getByRole("heading", { name: "Outbox" }).waitFor({ state: "visible" });
        assert.equal(await outbox.locator("article").filter({ hasText: email }).count(), 0);
      });
      await step("ask for a code", async () => {
        await signedOutUI(page);
        await page.fill("#pwl-email", email);
        await page.click("#pwl-send");
        await page.locator("#pwl-code-form").waitFor({ state: "visible" });
      });
      const code = await step("read it on the outbox", async () => {
        const mail = outbox.locator("article").filter({ hasText: email }).first();
        await mail.waitFor({ state: "visible", timeout: 15_000 });
        const code = (await mail.locator("output").textContent()).trim();
        assert.match(code, /^\d{6}$/);
        const link = mail.getByRole("link").filter({ hasText: "/auth/verify?" });
        assert.equal(await link.count(), 1, "the sign-in link is clickable");
        return code;
      });
      await step("outbox screenshots", () => shoot(outbox, "outbox"));
      await outbox.close();
      await step("type it", async () => {
        await page.fill("#pwl-code", code);
        await page.click("#pwl-signin");
        await signedInAs(page, email);
      });
      assert.equal((await apiMe(page, demo.url)).status, 200);
    }),
  );

  test("sign up with a passkey, and in again with it", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "dev-passkey", async ({ page, step }) => {
      const email = newEmail("dev-pk");
      await virtualAuthenticator(page);
      await step("open", () => open(page, demo.url));
      await step("sign up with a passkey", async () => {
        await signedOutUI(page);
        await page.fill("#pk-email", email);
        await page.click("#pk-signup");
        await signedInAs(page, email);
      });
      const { userId } = JSON.parse((await apiMe(page, demo.url)).body);
      await step("sign out", () => signOut(page));
      await step("sign in with the passkey", async () => {
        await page.click("#pk-signin");
        await signedInAs(page, email);
      });
      assert.equal(JSON.parse((await apiMe(page, demo.url)).body).userId, userId, "the same user");
    }),
  );
});

// -dev offers TOTP: a user sets an authenticator app up on the account
// page, once their address is verified, and from then on signs in with a
// password and a code.
describe("go run ./examples/demo -dev: TOTP", { timeout: 6 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDevDemo();
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  test("sign up with a password, add an authenticator app on the account page; sign in with a password and a TOTP code", { timeout: 2 * TEST_TIMEOUT }, () =>
    session(browser, "dev-totp", async ({ page, step }) => {
      const email = newEmail("dev-totp");
      const errors = [];
      page.on("console", (m) => {
        // Chromium logs each refusal, such as the 403 below, as an error.
        if (m.type() === "error" && !m.text().startsWith("Failed to load resource:")) errors.push(m.text());
      });
      page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
      await step("open", () => open(page, demo.url));
      await step("sign up", () => passwordForm(page, "#signup", email));
      await step("account page", async () => {
        await page.click("#account-link");
        await page.locator("#mfa-manage").waitFor({ state: "visible" });
      });
      // Not a 401, after which the SDK refreshes the session and asks again.
      const isDevice = (r) =>
        r.request().method() === "POST" && new URL(r.url()).pathname === "/auth/totp/device" && r.status() !== 401;
      const refused = page.waitForResponse(isDevice);
      await step("add an authenticator app before verifying: the page asks for that first", async () => {
        await page.click("#totp-add");
        assert.equal((await refused).status(), 403);
        await assertText(page, "#mfa-manage-error", `Verify your email address first: a link is on its way to ${email}.`);
        assert.equal(await page.locator("#account").isVisible(), true);
        assert.equal(await page.locator("#mfa-setup").isVisible(), false);
        await assertText(page, "#totp-devices", "None.");
        const account = await page.evaluate(async () => (await fetch("/api/account")).json());
        assert.deepEqual(account.secondFactors.totp, [], "no app was added");
      });
      await step("open the link from the outbox", () => verifyFromOutbox(page, demo.url, email));
      const created = page.waitForResponse(isDevice);
      await step("add an authenticator app", async () => {
        await page.bringToFront();
        await page.click("#totp-add");
        assert.equal((await created).status(), 200);
      });
      const secret = await step("the key as text", async () => {
        await page.locator("#mfa-setup").waitFor({ state: "visible" });
        const body = await (await created).json();
        const shown = (await page.locator("#mfa-secret").textContent()).replace(/\s+/g, "");
        assert.equal(shown, body.secret);
        return shown;
      });
      await step("its code", async () => {
        await page.fill("#mfa-code", totp(secret));
        await page.click("#mfa-verify");
        await page.locator("#recovery-new").waitFor({ state: "visible" });
        await page.click("#recovery-saved");
      });
      await step("sign out", async () => {
        await page.click("#account-home");
        await signOut(page);
      });
      await step("sign in with the password", async () => {
        await page.fill("#email", email);
        await page.fill("#password", PASSWORD);
        await page.click("#signin");
        await page.locator("#mfa-code").waitFor({ state: "visible" });
      });
      await step("a session without the code is refused", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 403, me.body);
      });
      await step("and the next TOTP code", async () => {
        // This step's code was spent at set-up; the next one is
        // accepted already.
        await page.fill("#mfa-code", totp(secret, Date.now() + 30_000));
        await page.click("#mfa-verify");
        await signedInAs(page, email);
      });
      const me = await apiMe(page, demo.url);
      assert.equal(me.status, 200, me.body);
      assert.equal(JSON.parse(me.body).email, email);
      assert.deepEqual(errors, [], "console errors");
    }),
  );

  // A passkey is a second factor in -dev too: one added on the account
  // page is asked for after the password, as an app is.
  test("sign up with a password, add a passkey on the account page; the next password sign-in asks for the passkey", { timeout: 2 * TEST_TIMEOUT }, () =>
    session(browser, "dev-passkey-factor", async ({ page, step }) => {
      const email = newEmail("dev-pk-factor");
      const authenticator = await virtualAuthenticator(page);
      await step("open", () => open(page, demo.url));
      await step("sign up", () => passwordForm(page, "#signup", email));
      await step("verify the address", async () => {
        await askForLink(page, email);
        await verifyFromOutbox(page, demo.url, email);
        await page.bringToFront();
      });
      await step("add a passkey on the account page", async () => {
        await page.click("#account-link");
        await page.locator("#account-passkey-add").waitFor({ state: "visible" });
        await page.click("#account-passkey-add");
        await page.locator("#account-passkey-list li button").first().waitFor({ state: "visible" });
        assert.equal((await authenticator.credentials()).length, 1);
      });
      await step("still signed in", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 200, me.body);
      });
      await step("sign out", async () => {
        await page.click("#account-home");
        await signOut(page);
      });
      await step("sign in with the password: the passkey is asked for", async () => {
        await passwordForm(page, "#signin", email);
        await page.locator("#mfa-passkey-use").waitFor({ state: "visible" });
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 403, me.body);
      });
      await step("use the passkey", async () => {
        await page.click("#mfa-passkey-use");
        await signedInAs(page, email);
      });
      const me = await apiMe(page, demo.url);
      assert.equal(me.status, 200, me.body);
    }),
  );
});
