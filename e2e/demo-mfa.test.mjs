// End-to-end tests of the demo's page with -mfa totp, in Chromium, in
// cookie mode and in header mode (/?mode=header): after sign-up the page
// sets up an authenticator app (a QR code and the key as text, then a
// code), shows the recovery codes once, and asks for the app's code, or
// a recovery code, at the next sign-in; with -mfa totp,webauthn, a
// passkey (Chromium's virtual authenticator) does instead. The codes are computed here as an
// authenticator app does (RFC 6238: HMAC-SHA-1, 30-second steps, 6 digits).
//
//	cd e2e && npm ci && node --test demo-mfa.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  ACCESS_TTL_MS,
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
  startDemo,
  virtualAuthenticator,
  totp,
} from "./helpers.mjs";

const PASSWORD = "correct horse 1";
const STEP_MS = 30_000;

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

// wrongCode is a code that no step the server accepts now has.
function wrongCode(secret) {
  const now = Date.now();
  const right = new Set([-2, -1, 0, 1, 2].map((k) => totp(secret, now + k * STEP_MS)));
  for (let n = 123456; ; n++) {
    const c = String(n % 1_000_000).padStart(6, "0");
    if (!right.has(c)) return c;
  }
}

// RFC 6238's test vector (SHA-1, T = 59 s): helpers.mjs's totp is right.
assert.equal(totp("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", 59_000), "287082");

// ---- page actions ------------------------------------------------------------

async function submitAuth(page, button, email, password = PASSWORD) {
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", password);
  await page.click(button);
}

// mfaStep waits for the MFA step and asserts that the code field has the
// focus: the set-up (with a QR code) or the code of an app set up.
async function mfaStep(page, setup) {
  await page.locator("#mfa").waitFor({ state: "visible" });
  assert.equal(await page.locator("#signed-in").isVisible(), false);
  await page.locator("#mfa-setup").waitFor({ state: setup ? "visible" : "hidden" });
  await page.waitForFunction(() => document.activeElement && document.activeElement.id === "mfa-code");
}

// setUpScreen reads the set-up screen: the QR code (an SVG) and the key as
// text, which must be the secret the server made (POST /auth/totp/device).
async function setUpScreen(page, created) {
  const res = await created;
  const body = await res.json();
  assert.equal(body.status, "OK");
  assert.match(body.qrCodeString, new RegExp(`^otpauth://totp/.*[?&]secret=${body.secret}(&|$)`));
  const svg = page.locator("#mfa-qr svg");
  await svg.waitFor({ state: "visible" });
  assert.equal(await svg.getAttribute("role"), "img");
  assert.ok((await page.locator("#mfa-qr-title").textContent()).includes("QR code"));
  const box = await svg.boundingBox();
  assert.ok(box.width >= 100 && Math.abs(box.width - box.height) < 1, `QR code box ${JSON.stringify(box)}`);
  assert.ok(((await page.locator("#mfa-qr path").getAttribute("d")) || "").length > 1000, "the QR code has modules");
  const shown = (await page.locator("#mfa-secret").textContent()).replace(/\s+/g, "");
  assert.equal(shown, body.secret);
  return { secret: shown, deviceName: body.deviceName };
}

const deviceCreated = (page) =>
  page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/auth/totp/device");

async function typeCode(page, code) {
  await page.fill("#mfa-code", code);
  await page.click("#mfa-verify");
}

// signUpWithApp signs up, sets up an authenticator app with its current
// code, and returns its secret and the recovery codes the page shows.
async function signUpWithApp(page, step, email) {
  const created = deviceCreated(page);
  await step("sign up", () => submitAuth(page, "#signup", email));
  await step("set-up screen", () => mfaStep(page, true));
  const { secret } = await step("QR code and key", () => setUpScreen(page, created));
  await step("code", () => typeCode(page, totp(secret)));
  await step("signed in", () => signedInAs(page, email));
  const codes = await step("recovery codes shown", async () => {
    await page.locator("#recovery-new").waitFor({ state: "visible" });
    await assertText(page, "#recovery-new", "they will not be shown again");
    const codes = await page.locator("#recovery-codes li").allTextContents();
    assert.equal(codes.length, 10, `codes: ${codes}`);
    assert.equal(new Set(codes).size, 10);
    await assertText(page, "#recovery-left", "Recovery codes left: 10.");
    return codes;
  });
  return { secret, codes };
}

async function signOut(page) {
  await page.click("#signout");
  await signedOutUI(page);
}

// ---- the tests ---------------------------------------------------------------

for (const mode of ["cookie", "header"]) {
  describe(`MFA, ${mode} mode`, { timeout: 4 * TEST_TIMEOUT * 2 }, () => {
    let demo, browser, home;
    before(async () => {
      demo = await startDemo(["-mfa", "totp"]);
      browser = await launch();
      home = mode === "header" ? `${demo.url}/?mode=header` : `${demo.url}/`;
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await demo?.stop();
    });
    const it = (name, fn) =>
      test(name, { timeout: TEST_TIMEOUT }, () => session(browser, `mfa-${mode}-${name}`, fn));

    it("set up an app at sign-up, then sign in with its code and with a recovery code", async ({ page, step }) => {
      const email = newEmail("mfa");
      // A phone's width: the set-up screen fits without scrolling sideways.
      await page.setViewportSize({ width: 360, height: 740 });
      await step("open", () => open(page, home));
      await step("features", () => assertText(page, "#features", "Two-step sign-in: totp"));
      const created = deviceCreated(page);
      await step("sign up", () => submitAuth(page, "#signup", email));
      await step("set-up screen", () => mfaStep(page, true));
      const { secret, deviceName } = await step("QR code and key", () => setUpScreen(page, created));
      await step("fits a phone", async () => {
        const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(wide <= 0, `the page is ${wide}px wider than the screen`);
      });
      await step("no recovery code before set-up", async () => {
        assert.equal(await page.locator("#mfa-to-recovery").isVisible(), false);
      });
      await step("api/me refused", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 403, me.body);
        assert.equal(JSON.parse(me.body).claimValidationErrors[0].id, "st-mfa");
      });
      await step("a wrong code", async () => {
        await typeCode(page, wrongCode(secret));
        await assertText(page, "#mfa-error", "4 attempts left.");
        assert.equal(await page.locator("#mfa-code").getAttribute("aria-invalid"), "true");
        assert.equal(await page.evaluate(() => document.activeElement.id), "mfa-code");
        assert.equal(await page.locator("#mfa-error").getAttribute("aria-live"), "polite");
      });
      await step("the right code", () => typeCode(page, totp(secret)));
      await step("signed in", () => signedInAs(page, email));
      const codes = await step("recovery codes shown once", async () => {
        await page.locator("#recovery-new").waitFor({ state: "visible" });
        await assertText(page, "#recovery-new", "Save these codes now, somewhere safe: they will not be shown again.");
        const codes = await page.locator("#recovery-codes li").allTextContents();
        assert.equal(codes.length, 10, `codes: ${codes}`);
        for (const c of codes) assert.match(c, /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
        assert.equal(await page.evaluate(() => document.activeElement.id), "recovery-new-title");
        await assertText(page, "#recovery-left", "Recovery codes left: 10.");
        return codes;
      });
      await step("the app is listed", async () => {
        const items = await page.locator("#totp-devices li").allTextContents();
        assert.equal(items.length, 1, `devices: ${items}`);
        assert.ok(items[0].includes(deviceName) && !items[0].includes("not set up"), items[0]);
        await assertText(page, "#totp-add", "Add another authenticator app");
      });
      await step("api/me", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 200, me.body);
        assert.equal(JSON.parse(me.body).email, email);
      });
      await step("saved", async () => {
        await page.click("#recovery-saved");
        await page.locator("#recovery-new").waitFor({ state: "hidden" });
        assert.equal(await page.locator("#recovery-codes li").count(), 0);
      });
      // The session keeps its second factor across refreshes.
      await step("reload after expiry", async () => {
        await sleep(ACCESS_TTL_MS + 1000);
        await open(page, home);
        await signedInAs(page, email);
        assert.equal(await page.locator("#recovery-new").isVisible(), false);
      });

      await step("sign out", () => signOut(page));
      await step("sign in", () => submitAuth(page, "#signin", email));
      await step("code screen", () => mfaStep(page, false));
      // This step's code was spent at set-up; the next one is accepted
      // already.
      await step("the next code", () => typeCode(page, totp(secret, Date.now() + STEP_MS)));
      await step("signed in again", () => signedInAs(page, email));
      await step("no codes shown", async () => {
        assert.equal(await page.locator("#recovery-new").isVisible(), false);
        await assertText(page, "#recovery-left", "Recovery codes left: 10.");
      });

      await step("sign out 2", () => signOut(page));
      await step("sign in 2", () => submitAuth(page, "#signin", email));
      await step("code screen 2", () => mfaStep(page, false));
      await step("use a recovery code", async () => {
        await page.click("#mfa-to-recovery");
        await page.locator("#mfa-recovery-form").waitFor({ state: "visible" });
        assert.equal(await page.locator("#mfa-code-form").isVisible(), false);
        await page.waitForFunction(() => document.activeElement.id === "mfa-recovery-code");
      });
      await step("a wrong recovery code", async () => {
        await page.fill("#mfa-recovery-code", "aaaa-bbbb-cccc-dddd");
        await page.click("#mfa-recovery-use");
        await assertText(page, "#mfa-error", "That recovery code is wrong, or was used already. 4 attempts left.");
      });
      await step("a recovery code", async () => {
        await page.fill("#mfa-recovery-code", codes[0].toUpperCase());
        await page.click("#mfa-recovery-use");
      });
      await step("signed in with it", async () => {
        await signedInAs(page, email);
        await assertText(page, "#status", "Signed in with a recovery code. 9 codes left.");
        await assertText(page, "#recovery-left", "Recovery codes left: 9.");
      });
      await step("sign out 3", () => signOut(page));
      await step("sign in 3", () => submitAuth(page, "#signin", email));
      await step("the used code again", async () => {
        await mfaStep(page, false);
        await page.click("#mfa-to-recovery");
        await page.fill("#mfa-recovery-code", codes[0]);
        await page.click("#mfa-recovery-use");
        await assertText(page, "#mfa-error", "That recovery code is wrong, or was used already.");
      });
      await step("sign out from the code screen", async () => {
        await page.click("#mfa-cancel");
        await signedOutUI(page);
        await assertText(page, "#status", "Signed out.");
      });
    });

    it("add another app, remove one, new recovery codes", async ({ page, step }) => {
      const email = newEmail("apps");
      await step("open", () => open(page, home));
      await signUpWithApp(page, step, email);
      await step("saved", () => page.click("#recovery-saved"));
      const created = deviceCreated(page);
      await step("add another", () => page.click("#totp-add"));
      await step("add screen", async () => {
        await mfaStep(page, true);
        await assertText(page, "#mfa-title", "Add an authenticator app");
        await assertText(page, "#mfa-cancel", "Cancel");
      });
      const second = await step("second QR code", () => setUpScreen(page, created));
      await step("cancel", async () => {
        await page.click("#mfa-cancel");
        await signedInAs(page, email);
        assert.equal(await page.locator("#totp-devices li").count(), 1);
      });
      const created2 = deviceCreated(page);
      await step("add another again", () => page.click("#totp-add"));
      await step("add screen again", () => mfaStep(page, true));
      const third = await step("third QR code", () => setUpScreen(page, created2));
      assert.notEqual(third.secret, second.secret);
      await step("its code", () => typeCode(page, totp(third.secret, Date.now() + STEP_MS)));
      await step("added", async () => {
        await signedInAs(page, email);
        await assertText(page, "#status", "Authenticator app added.");
        assert.equal(await page.locator("#recovery-new").isVisible(), false);
        const items = await page.locator("#totp-devices li").allTextContents();
        assert.equal(items.length, 2, `devices: ${items}`);
      });
      await step("remove the first", async () => {
        await page.locator("#totp-devices li").first().getByRole("button", { name: /^Remove / }).click();
        await assertText(page, "#status", "Removed ");
        await page.waitForFunction(() => document.querySelectorAll("#totp-devices li").length === 1);
        assert.ok((await page.locator("#totp-devices li").textContent()).includes(third.deviceName));
      });
      await step("the last one stays", async () => {
        await page.getByRole("button", { name: `Remove ${third.deviceName}` }).click();
        await assertText(page, "#mfa-manage-error", "This is your last second factor");
        assert.equal(await page.locator("#totp-devices li").count(), 1);
      });
      await step("new recovery codes", async () => {
        await page.click("#recovery-make");
        await page.locator("#recovery-new").waitFor({ state: "visible" });
        assert.equal(await page.locator("#recovery-codes li").count(), 10);
        await assertText(page, "#recovery-left", "Recovery codes left: 10.");
      });
    });

    it("wrong codes count down, then lock", async ({ page, step }) => {
      const email = newEmail("lock");
      await step("open", () => open(page, home));
      const { secret, codes } = await signUpWithApp(page, step, email);
      await step("sign out", () => signOut(page));
      await step("sign in", () => submitAuth(page, "#signin", email));
      await step("code screen", () => mfaStep(page, false));
      await step("not a code", async () => {
        await typeCode(page, "12ab");
        await assertText(page, "#mfa-error", "Enter the 6-digit code");
      });
      const wrong = wrongCode(secret);
      for (const left of ["4 attempts left.", "3 attempts left.", "2 attempts left.", "1 attempt left.", "That was the last attempt"]) {
        await step(`wrong: ${left}`, async () => {
          await typeCode(page, wrong);
          await assertText(page, "#mfa-error", left);
        });
      }
      await step("locked", async () => {
        await typeCode(page, totp(secret, Date.now() + STEP_MS));
        await assertText(page, "#mfa-error", "Too many wrong codes. Try again in 15 minutes.");
      });
      await step("a wrong recovery code too", async () => {
        await page.click("#mfa-to-recovery");
        await page.fill("#mfa-recovery-code", "aaaa-bbbb-cccc-dddd");
        await page.click("#mfa-recovery-use");
        await assertText(page, "#mfa-error", "Too many wrong codes. Try again in 15 minutes.");
      });
      await step("still refused", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 403, me.body);
      });
      // The lock holds app codes only: the owner's recovery code is
      // taken, so a password alone cannot keep them out.
      await step("a right recovery code signs in", async () => {
        await page.fill("#mfa-recovery-code", codes[1]);
        await page.click("#mfa-recovery-use");
        await signedInAs(page, email);
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 200, me.body);
      });
    });
  });
}

// -mfa totp,webauthn: a passkey in place of the app. Passkeys need a
// domain name: the page is opened as http://localhost:<port>.
describe("MFA with passkeys", { timeout: 2 * TEST_TIMEOUT * 2 }, () => {
  let demo, browser, home;
  before(async () => {
    const port = await freePort();
    home = `http://localhost:${port}/`;
    demo = await startDemo(["-passkeys", "-app-url", home.slice(0, -1), "-mfa", "totp,webauthn"], { port });
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });
  const it = (name, fn) => test(name, { timeout: TEST_TIMEOUT }, () => session(browser, `mfa-passkeys-${name}`, fn));

  it("set up a passkey instead of an app, then sign in with it", async ({ page, step }) => {
    const email = newEmail("mfa-pk");
    const authenticator = await virtualAuthenticator(page);
    await step("open", () => open(page, home));
    await step("features", () => assertText(page, "#features", "Two-step sign-in: totp or webauthn"));
    await step("sign up", () => submitAuth(page, "#signup", email));
    await step("set-up screen", async () => {
      await mfaStep(page, true);
      await page.locator("#mfa-qr svg").waitFor({ state: "visible" });
      await page.locator("#mfa-passkey-create").waitFor({ state: "visible" });
      assert.equal(await page.locator("#mfa-passkey-use").isVisible(), false);
    });
    await step("set up a passkey", () => page.click("#mfa-passkey-create"));
    await step("signed in", async () => {
      await signedInAs(page, email);
      await assertText(page, "#status", "Two-step sign-in is set up.");
      assert.equal(await page.locator("#recovery-codes li").count(), 10);
      assert.equal((await authenticator.credentials()).length, 1);
    });
    await step("the set-up's app is gone", async () => {
      await assertText(page, "#totp-devices", "None.");
      await assertText(page, "#totp-add", "Add an authenticator app");
    });
    await step("sign out", () => signOut(page));
    await step("sign in", () => submitAuth(page, "#signin", email));
    await step("passkey screen", async () => {
      await page.locator("#mfa").waitFor({ state: "visible" });
      await page.locator("#mfa-passkey-use").waitFor({ state: "visible" });
      assert.equal(await page.locator("#mfa-code-form").isVisible(), false);
      assert.equal(await page.locator("#mfa-setup").isVisible(), false);
      await page.waitForFunction(() => document.activeElement.id === "mfa-passkey-use");
      const me = await apiMe(page, home.slice(0, -1));
      assert.equal(me.status, 403, me.body);
    });
    await step("use the passkey", () => page.click("#mfa-passkey-use"));
    await step("signed in with it", async () => {
      await signedInAs(page, email);
      const me = await apiMe(page, home.slice(0, -1));
      assert.equal(me.status, 200, me.body);
    });
  });

  it("an app set up: its code, and no passkey in its place", async ({ page, step }) => {
    const email = newEmail("mfa-app-pk");
    await virtualAuthenticator(page);
    await step("open", () => open(page, home));
    const { secret } = await signUpWithApp(page, step, email);
    await step("sign out", () => signOut(page));
    await step("sign in", () => submitAuth(page, "#signin", email));
    await step("code screen", async () => {
      await mfaStep(page, false);
      // No passkey yet, and one may not be set up in place of the app.
      assert.equal(await page.locator("#mfa-passkeys").isVisible(), false);
    });
    await step("the next code", () => typeCode(page, totp(secret, Date.now() + STEP_MS)));
    await step("signed in", () => signedInAs(page, email));
  });
});
