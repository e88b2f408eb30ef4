// End-to-end tests of the demo's account page, /account, in Chromium, on
// the demo started as the README says (-dev: every sign-in method, the
// development provider, the outbox at /dev/outbox): it lists where the
// user is signed in (two browser contexts are two devices) and ends one
// session or all the others; links the development provider by a proven
// email and unlinks it; adds and removes a passkey (Chromium's virtual
// authenticator); sets up and removes an authenticator app, whose codes
// are computed here (RFC 6238), and makes recovery codes. Passkeys and
// apps wait for a verified address (-dev verifies, optionally): one
// asked for before is refused, and the page mails the link and says so.
// Codes and links sent by email are read from /dev/outbox.json. The page
// must fit a phone's width with no sideways scroll.
//
// With SCREENSHOTS=1 it saves the account page at desktop and phone
// width as examples/demo/screenshots/account-desktop.png and
// account-phone.png.
//
//	cd e2e && npm ci && node --test demo-account.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  ACCESS_TTL_MS,
  TEST_TIMEOUT,
  accountPage,
  apiMe,
  assertText,
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

const here = path.dirname(fileURLToPath(import.meta.url));
const screenshots = path.resolve(here, "..", "examples", "demo", "screenshots");
const PASSWORD = "correct horse 1";
const PROVIDER = "Dev provider";

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

// ---- page actions ------------------------------------------------------------

async function passwordForm(page, base, button, email, query = "") {
  await open(page, base + "/" + query);
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", PASSWORD);
  await page.click(button);
  await signedInAs(page, email);
}

const signUp = (page, base, email, query) => passwordForm(page, base, "#signup", email, query);
const signIn = (page, base, email, query) => passwordForm(page, base, "#signin", email, query);

// mails lists the outbox's emails to `to`, oldest first.
async function mails(base, to) {
  const res = await fetch(base + "/dev/outbox.json");
  assert.equal(res.status, 200);
  const { emails } = await res.json();
  return emails.filter((m) => m.to === to).sort((a, b) => a.id - b.id);
}

// passwordlessSignIn signs in with the code of a new email in the outbox.
async function passwordlessSignIn(page, base, email, query = "") {
  await open(page, base + "/account" + query);
  await signedOutUI(page);
  const before = (await mails(base, email)).length;
  await page.fill("#pwl-email", email);
  await page.click("#pwl-send");
  await page.locator("#pwl-code-form").waitFor({ state: "visible" });
  let sent;
  for (let i = 0; i < 100 && !sent; i++) {
    sent = (await mails(base, email))[before];
    if (!sent) await sleep(100);
  }
  assert.ok(sent && sent.code, `no new code for ${email} in the outbox`);
  await page.fill("#pwl-code", sent.code);
  await page.click("#pwl-signin");
}

// openVerificationLink opens the newest verification link to email in
// a new tab of page's browser, which verifies the address, and closes it.
async function openVerificationLink(page, base, email) {
  let link;
  for (let i = 0; i < 100 && !link; i++) {
    const sent = (await mails(base, email)).filter((m) => m.subject === "Verify your email").at(-1);
    link = sent?.links.find((l) => l.includes("/auth/verify-email?token="));
    if (!link) await sleep(100);
  }
  assert.ok(link, `no verification link for ${email} in the outbox`);
  const tab = await page.context().newPage();
  try {
    await open(tab, link);
    await assertText(tab, "#status", "Your email is verified.");
  } finally {
    await tab.close();
  }
}

// verifyAddress asks for a verification link from the signed-in view and
// opens it.
async function verifyAddress(page, base, email) {
  await page.click("#verify-send");
  await assertText(page, "#status", `A verification link is on its way to ${email}.`);
  await openVerificationLink(page, base, email);
}

async function sessionItems(page) {
  return page.locator("#account-sessions li").allTextContents();
}

async function focused(page) {
  return page.evaluate(() => document.activeElement && document.activeElement.id);
}

// fitsWidth asserts that the page does not scroll sideways.
async function fitsWidth(page) {
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(wide <= 0, `the page is ${wide}px wider than the screen`);
}

// refused asserts that the page's session no longer works, once its
// access token has expired and the SDK has tried to refresh it.
async function refused(page, base) {
  await sleep(ACCESS_TTL_MS + 500);
  const me = await apiMe(page, base);
  assert.equal(me.status, 401, me.body);
}

// ---- the tests ---------------------------------------------------------------

describe("account page, -dev", { timeout: 6 * TEST_TIMEOUT }, () => {
  let demo, browser, base;
  before(async () => {
    demo = await startDemo(["-dev"]);
    // -dev serves the app on localhost, which passkeys need.
    base = `http://localhost:${demo.port}`;
    assert.ok(demo.stdout.includes(`demo: open ${base}`), demo.stdout);
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });
  const it = (name, fn) => test(name, { timeout: 2 * TEST_TIMEOUT }, () => session(browser, `account-${name}`, fn));

  it("sessions: two devices, end one, end all others", async ({ page, step }) => {
    // The demo is fresh: the screenshots show a plain address.
    const email = "ada@example.com";
    await step("sign up", () => signUp(page, base, email));
    // Another browser: another device.
    const other = await browser.newContext();
    const more = [];
    try {
      const otherPage = await other.newPage();
      await step("sign in elsewhere", () => signIn(otherPage, base, email));
      await step("account page", () => accountPage(page));
      await step("development banner", async () => {
        await page.locator("#dev-banner").waitFor({ state: "visible" });
        assert.equal(await page.locator("#dev-banner a").getAttribute("href"), "/dev/outbox");
      });
      await step("two sessions", async () => {
        await assertText(page, "#account-who", email);
        const items = await sessionItems(page);
        assert.equal(items.length, 2, items.join(" | "));
        // This one first, then the other, with where it started.
        assert.match(items[0], /this device/);
        assert.match(items[1], /Headless Chrome on Linux/);
        assert.match(items[1], /from 127\.0\.0\.1/);
        assert.match(items[1], /with email and password/);
        await assertText(page, "#account-logins", "Email and password");
        await assertText(page, "#account-logins", "You signed in with this here");
      });
      await step("fits a phone", async () => {
        await page.setViewportSize({ width: 360, height: 740 });
        await fitsWidth(page);
        if (process.env.SCREENSHOTS === "1") {
          await mkdir(screenshots, { recursive: true });
          await page.screenshot({ path: path.join(screenshots, "account-phone.png"), fullPage: true });
          await page.setViewportSize({ width: 1280, height: 900 });
          await page.screenshot({ path: path.join(screenshots, "account-desktop.png"), fullPage: true });
        }
        await page.setViewportSize({ width: 1280, height: 720 });
      });
      await step("end the other", async () => {
        await page.getByRole("button", { name: /^Sign out the session on Headless Chrome on Linux/ }).click();
        await assertText(page, "#status", "Signed out the session on Headless Chrome on Linux.");
        assert.equal(await page.locator("#account-sessions li").count(), 1);
        assert.equal(await focused(page), "account-sessions-title");
        assert.equal(await page.locator("#account-revoke-others").isVisible(), false);
      });
      await step("the other is refused", () => refused(otherPage, base));
      await step("the other page shows it", async () => {
        await otherPage.reload();
        await signedOutUI(otherPage);
      });

      // Two more devices, then "Sign out all other sessions".
      for (let i = 0; i < 2; i++) {
        const ctx = await browser.newContext();
        more.push(ctx);
        const p = await ctx.newPage();
        await step(`sign in on device ${i + 3}`, () => signIn(p, base, email));
      }
      await step("three sessions", async () => {
        await page.reload();
        await page.locator("#account").waitFor({ state: "visible" });
        assert.equal((await sessionItems(page)).length, 3);
      });
      await step("end all others", async () => {
        await page.click("#account-revoke-others");
        await assertText(page, "#status", "Signed out 2 other sessions.");
        assert.equal(await page.locator("#account-sessions li").count(), 1);
        assert.equal(await focused(page), "account-sessions-title");
      });
      await step("the others are refused", async () => {
        await sleep(ACCESS_TTL_MS + 500);
        for (const ctx of more) {
          const me = await apiMe(ctx.pages()[0], base);
          assert.equal(me.status, 401, me.body);
        }
      });
      await step("this one still works", async () => {
        const me = await apiMe(page, base);
        assert.equal(me.status, 200, me.body);
      });
    } finally {
      await other.close().catch(() => {});
      for (const ctx of more) await ctx.close().catch(() => {});
    }
  });

  it("link the development provider, then unlink it", async ({ page, step }) => {
    const email = newEmail("link");
    await step("passwordless sign-in, code from the outbox", () => passwordlessSignIn(page, base, email));
    await step("account page", async () => {
      await page.locator("#account").waitFor({ state: "visible" });
      const logins = await page.locator("#account-logins li").allTextContents();
      assert.equal(logins.length, 1, logins.join(" | "));
      assert.match(logins[0], /Code or link by email/);
      assert.match(logins[0], /verified/);
      await assertText(page, "#account-links-note", "Sign in with a provider to add it to this account");
    });
    await step("to the provider", async () => {
      await page.getByRole("button", { name: `Link ${PROVIDER}` }).click();
      await page.waitForURL(/\/dev\/oidc\//);
    });
    await step("provider vouches for the same email", async () => {
      await page.fill("#email", email);
      assert.equal(await page.isChecked("#email_verified"), true);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
    });
    await step("linked, in the same session", async () => {
      await page.waitForURL(/\/account$/);
      await assertText(page, "#status", `Linked ${PROVIDER}: you can sign in with it now.`);
      const logins = await page.locator("#account-logins li").allTextContents();
      assert.equal(logins.length, 2, logins.join(" | "));
      assert.ok(logins.some((l) => l.includes(PROVIDER) && l.includes(email)), logins.join(" | "));
      const sessions = await sessionItems(page);
      assert.equal(sessions.length, 1, sessions.join(" | "));
      assert.match(sessions[0], /with code or link by email/i);
    });
    await step("unlink it: this session goes on", async () => {
      await page.getByRole("button", { name: `Unlink ${PROVIDER} (${email})` }).click();
      await assertText(page, "#status", `Unlinked ${PROVIDER}: it no longer signs in to this account.`);
      const logins = await page.locator("#account-logins li").allTextContents();
      assert.equal(logins.length, 1, logins.join(" | "));
      assert.ok(!logins[0].includes(PROVIDER));
    });
    await step("the last login cannot be unlinked", async () => {
      await page.getByRole("button", { name: /^Unlink Code or link by email/ }).click();
      await assertText(page, "#account-error", "This is your only way to sign in");
      assert.equal(await page.locator("#account-error").getAttribute("role"), "alert");
      assert.equal(await page.locator("#account-logins li").count(), 1);
    });
  });

  for (const mode of ["cookie", "header"]) {
  const query = mode === "header" ? "?mode=header" : "";
  it(`${mode} mode: a provider that gives another email is added to the account`, async ({ page, step }) => {
    const email = newEmail(`other-email-${mode}`);
    const elsewhere = newEmail("someone-else");
    await step("passwordless sign-in", () => passwordlessSignIn(page, base, email, query));
    await step("account page", () => page.locator("#account").waitFor({ state: "visible" }));
    await step("provider, another email", async () => {
      await page.getByRole("button", { name: `Link ${PROVIDER}` }).click();
      await page.waitForURL(/\/dev\/oidc\//);
      await page.fill("#email", elsewhere);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
    });
    await step("linked", async () => {
      await page.waitForURL(/\/account(\?mode=header)?$/);
      await assertText(page, "#status", `Linked ${PROVIDER}: you can sign in with it now.`);
      const logins = await page.locator("#account-logins li").allTextContents();
      assert.ok(logins.some((l) => l.includes(PROVIDER) && l.includes(elsewhere)), logins.join(" | "));
    });
  });

  it(`${mode} mode: add an email for sign-in codes; another account's is refused`, async ({ page, step }) => {
    const email = newEmail(`codes-owner-${mode}`);
    const codes = newEmail("codes-added");
    // A code proves the address; a password sign-up's account adds
    // nothing until a reset proves it.
    await step("passwordless sign-in", () => passwordlessSignIn(page, base, email, query));
    await step("account page", () => page.locator("#account").waitFor({ state: "visible" }));
    const code = async (to) => {
      let sent;
      for (let i = 0; i < 100 && !sent; i++) {
        sent = (await mails(base, to)).at(-1);
        if (!sent) await sleep(100);
      }
      assert.ok(sent && sent.code, `no code for ${to} in the outbox`);
      return sent.code;
    };
    await step("ask for a code", async () => {
      await page.fill("#account-pwl-email", codes);
      await page.click("#account-pwl-submit");
      await assertText(page, "#status", `A code is on its way to ${codes}`);
      assert.equal(await focused(page), "account-pwl-code");
    });
    await step("a wrong code is told", async () => {
      const right = await code(codes);
      await page.fill("#account-pwl-code", right === "000000" ? "111111" : "000000");
      await page.click("#account-pwl-submit");
      await assertText(page, "#account-pwl-code-error", "That is not the code in the email.");
    });
    await step("the code: added", async () => {
      await page.fill("#account-pwl-code", await code(codes));
      await page.click("#account-pwl-submit");
      await assertText(page, "#status", `Added ${codes}`);
      const logins = await page.locator("#account-logins li").allTextContents();
      assert.ok(logins.some((l) => l.includes("Code or link by email") && l.includes(codes)), logins.join(" | "));
    });
    await step("another account's address is refused", async () => {
      const other = newEmail("codes-theirs");
      const ctx = await page.context().browser().newContext();
      try {
        await passwordlessSignIn(await ctx.newPage(), base, other);
        await sleep(500);
      } finally {
        await ctx.close();
      }
      await page.fill("#account-pwl-email", other);
      await page.click("#account-pwl-submit");
      await assertText(page, "#status", `A code is on its way to ${other}`);
      await page.fill("#account-pwl-code", await code(other));
      await page.click("#account-pwl-submit");
      await assertText(page, "#account-error", "belongs to another account");
    });
  });
  }

  it("add and remove a passkey", async ({ page, step }) => {
    const email = newEmail("passkey");
    const authenticator = await virtualAuthenticator(page);
    await step("sign up", () => signUp(page, base, email));
    await step("account page", () => accountPage(page));
    await step("no passkey", () => assertText(page, "#account-passkey-list", "None."));
    await step("add before verifying: the page asks for that first", async () => {
      await page.click("#account-passkey-add");
      await assertText(page, "#account-error", `Verify your email address first: a link is on its way to ${email}.`);
      await assertText(page, "#account-passkey-list", "None.");
      const account = await page.evaluate(async () => (await fetch("/api/account")).json());
      assert.equal(account.logins.filter((l) => l.method === "webauthn").length, 0, "no passkey was added");
    });
    await step("open the link", () => openVerificationLink(page, base, email));
    await step("add", async () => {
      await page.click("#account-passkey-add");
      await assertText(page, "#status", "Passkey added");
      assert.equal(await page.locator("#account-error").textContent(), "");
      // The browser keeps the passkey it made for the refused attempt too.
      assert.equal((await authenticator.credentials()).length, 2);
      assert.equal(await page.locator("#account-passkey-list li").count(), 1);
      assert.equal(await focused(page), "account-passkeys-title");
      await assertText(page, "#account-logins", "1 passkey");
    });
    await step("remove", async () => {
      await page.getByRole("button", { name: "Remove Passkey 1" }).click();
      await assertText(page, "#status", "Removed Passkey 1.");
      await assertText(page, "#account-passkey-list", "None.");
    });
  });

  it("set up and remove an authenticator app, make recovery codes", async ({ page, step }) => {
    const email = newEmail("totp");
    await step("sign up", () => signUp(page, base, email));
    await step("verify the address", () => verifyAddress(page, base, email));
    await step("account page", () => accountPage(page));
    await step("none yet", async () => {
      await page.locator("#mfa-manage").waitFor({ state: "visible" });
      await assertText(page, "#totp-devices", "None.");
      // Opt-in: recovery codes come with the first app.
      assert.equal(await page.locator("#recovery-make").isVisible(), false);
      assert.equal(await page.locator("#recovery-left").isVisible(), false);
    });
    // Not the 401 of an access token past its 3 seconds, after which the
    // SDK refreshes the session and asks again.
    const created = page.waitForResponse(
      (r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/auth/totp/device" && r.status() !== 401,
    );
    await step("add an app", () => page.click("#totp-add"));
    const secret = await step("set-up screen", async () => {
      await page.locator("#mfa-setup").waitFor({ state: "visible" });
      const body = await (await created).json();
      assert.equal((await page.locator("#mfa-secret").textContent()).replace(/\s+/g, ""), body.secret);
      return body.secret;
    });
    await step("its code", async () => {
      await page.fill("#mfa-code", totp(secret));
      await page.click("#mfa-verify");
    });
    const first = await step("back on the account page, with recovery codes", async () => {
      await page.locator("#account").waitFor({ state: "visible" });
      await page.locator("#recovery-new").waitFor({ state: "visible" });
      const codes = await page.locator("#recovery-codes li").allTextContents();
      assert.equal(codes.length, 10);
      assert.equal(await focused(page), "recovery-new-title");
      assert.equal(await page.locator("#totp-devices li").count(), 1);
      return codes;
    });
    await step("saved", async () => {
      await page.click("#recovery-saved");
      await page.locator("#recovery-new").waitFor({ state: "hidden" });
      await assertText(page, "#recovery-left", "Recovery codes left: 10.");
    });
    await step("a new set", async () => {
      await page.click("#recovery-make");
      await page.locator("#recovery-new").waitFor({ state: "visible" });
      const codes = await page.locator("#recovery-codes li").allTextContents();
      assert.equal(codes.length, 10);
      assert.ok(!codes.some((c) => first.includes(c)), "the new set repeats old codes");
      await page.click("#recovery-saved");
    });
    await step("remove the app", async () => {
      await page.locator("#totp-devices li").first().getByRole("button", { name: /^Remove / }).click();
      await assertText(page, "#status", "Removed ");
      await assertText(page, "#totp-devices", "None.");
    });
    await step("the account says so", async () => {
      await page.reload();
      await page.locator("#account").waitFor({ state: "visible" });
      await assertText(page, "#totp-devices", "None.");
    });
  });
});

describe("today's flags: no account page", { timeout: 2 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDemo([]);
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  test("signed in, no Account link; /account is not served", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "account-none", async ({ page, step }) => {
      await step("sign up", () => signUp(page, demo.url, newEmail("none")));
      await step("no link", async () => {
        assert.equal(await page.locator("#account-link").isVisible(), false);
      });
      await step("404", async () => {
        for (const path of ["/account", "/api/account"]) {
          const res = await page.request.get(demo.url + path);
          assert.equal(res.status(), 404, path);
        }
      });
    }),
  );
});

describe("account page, a feature flag without -dev", { timeout: 2 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDemo(["-email-verification", "optional"]);
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  test("header mode: the account page keeps the mode and ends the other session", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "account-header", async ({ page, step }) => {
      const email = newEmail("header");
      const other = await browser.newContext();
      try {
        const otherPage = await other.newPage();
        await step("sign up", () => signUp(page, demo.url, email, "?mode=header"));
        await step("sign in elsewhere", () => signIn(otherPage, demo.url, email, "?mode=header"));
        await step("account page", async () => {
          await accountPage(page);
          assert.match(page.url(), /\/account\?mode=header$/);
          await assertText(page, "#mode", "Token transfer: header");
          assert.equal((await sessionItems(page)).length, 2);
        });
        await step("end the other", async () => {
          await page.getByRole("button", { name: /^Sign out the session on / }).click();
          await assertText(page, "#status", "Signed out the session on ");
          assert.equal((await sessionItems(page)).length, 1);
        });
        await step("the other is refused", () => refused(otherPage, demo.url));
      } finally {
        await other.close().catch(() => {});
      }
    }),
  );

  test("sessions and the one login, no development banner", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "account-plain", async ({ page, step }) => {
      const email = newEmail("plain");
      await step("sign up", () => signUp(page, demo.url, email));
      await step("account page", () => accountPage(page));
      await step("shown", async () => {
        assert.equal(await page.locator("#dev-banner").isVisible(), false);
        assert.equal(await page.locator("#account-passkeys").isVisible(), false);
        assert.equal(await page.locator("#mfa-manage").isVisible(), false);
        assert.equal(await page.locator("#account-links").isVisible(), false);
        assert.equal((await sessionItems(page)).length, 1);
      });
      await step("signed out, the page asks to sign in", async () => {
        await page.click("#account-home");
        await page.click("#signout");
        await signedOutUI(page);
        await open(page, demo.url + "/account");
        await signedOutUI(page);
        await assertText(page, "#status", "Sign in to see your account.");
      });
    }),
  );
});
