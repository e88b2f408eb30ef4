// End-to-end test of the demo's admin page, /admin (examples/demo/
// operators.go), in Chromium, with -dev (offline) and -admin: an admin
// finds a user by a part of their email and bans them, and that user's
// open account page signs itself out, saying the account is suspended;
// the admin then acts as another user (the main page says who is acting,
// and the account page refuses a new password), stops, and is the admin
// again on the admin page, whose audit log shows what happened. In cookie
// mode and in header mode.
//
//	cd e2e && npm ci && node --test demo-admin.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { TEST_TIMEOUT, accountPage, assertText, launch, open, session, signedInAs, signedOutUI, startDemo } from "./helpers.mjs";

const PASSWORD = "correct horse 1";
const ADMINS = { cookie: `admin-cookie-${process.pid}@example.com`, header: `admin-header-${process.pid}@example.com` };

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

async function signUp(page, base, email, query) {
  await open(page, base + "/" + query);
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", PASSWORD);
  await page.click("#signup");
  await signedInAs(page, email);
}

// find searches the admin page for email and opens the one user found.
async function find(page, email) {
  await page.fill("#admin-email", email.split("@")[0]);
  await page.click("#admin-find");
  const items = page.locator("#admin-users li");
  await items.filter({ hasText: email }).waitFor();
  assert.equal(await items.count(), 1, "the users found: " + (await items.allTextContents()).join(" | "));
  await page.getByRole("button", { name: "Open " + email }).click();
  await assertText(page, "#admin-user-title", email);
}

describe("admin page", { timeout: 4 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDemo(["-dev", "-email-verification", "off", "-admin", ADMINS.cookie, "-admin", ADMINS.header]);
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  for (const mode of ["cookie", "header"]) {
    const query = mode === "header" ? "?mode=header" : "";
    test(`${mode} mode: find and ban a user, act as another and stop`, { timeout: 3 * TEST_TIMEOUT }, () =>
      session(browser, `admin-${mode}`, async ({ page, step }) => {
        const bob = newEmail(`bob-${mode}`);
        const carol = newEmail(`carol-${mode}`);
        const others = await browser.newContext();
        try {
          const bobPage = await others.newPage();
          await step("bob signs up and opens his account page", async () => {
            await signUp(bobPage, demo.url, bob, query);
            await accountPage(bobPage);
          });
          await step("carol signs up", async () => {
            const carolContext = await browser.newContext();
            await signUp(await carolContext.newPage(), demo.url, carol, query);
            await carolContext.close();
          });
          await step("the admin opens the admin page", async () => {
            await signUp(page, demo.url, ADMINS[mode], query);
            await page.getByRole("link", { name: "Admin" }).click();
            await page.waitForURL(/\/admin(\?mode=header)?$/);
            await page.locator("#admin").waitFor({ state: "visible" });
            await page.locator("#admin-users li").filter({ hasText: carol }).waitFor();
          });
          await step("find bob and ban him", async () => {
            await find(page, bob);
            await page.fill("#admin-ban-reason", "chargebacks");
            await page.click("#admin-ban");
            await assertText(page, "#admin-user-ban", "Banned until lifted: chargebacks.");
            await page.locator("#admin-audit li").filter({ hasText: "user_banned" }).first().waitFor();
          });
          await step("bob's open page is signed out", async () => {
            await signedOutUI(bobPage);
            await assertText(bobPage, "#status", "This account is suspended.");
          });
          await step("bob cannot sign in", async () => {
            await bobPage.fill("#email", bob);
            await bobPage.fill("#password", PASSWORD);
            await bobPage.click("#signin");
            await assertText(bobPage, "#status", "Not allowed: This account is suspended.");
          });
          await step("act as carol", async () => {
            await find(page, carol);
            await page.click("#admin-impersonate");
            await signedInAs(page, carol);
            await assertText(page, "#acting", carol);
          });
          await step("carol's password cannot be changed", async () => {
            await accountPage(page);
            await page.fill("#account-new-password", "another horse 2");
            await page.click("#account-password-submit");
            await assertText(page, "#account-error", "Not allowed while an operator acts as this user.");
            await open(page, demo.url + "/" + query);
            await signedInAs(page, carol);
          });
          await step("stop, and be the admin again", async () => {
            await page.click("#acting-stop");
            await page.waitForURL(/\/admin(\?mode=header)?$/);
            await page.locator("#admin").waitFor({ state: "visible" });
            assert.equal(await page.locator("#admin-error").textContent(), "");
            await page.locator("#admin-audit li").filter({ hasText: "impersonation_ended" }).first().waitFor();
          });
        } finally {
          await others.close().catch(() => {});
        }
      }),
    );
  }
});
