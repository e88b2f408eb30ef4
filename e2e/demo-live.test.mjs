// End-to-end tests of the account page's live list of sessions, in
// Chromium: the page keeps a WebSocket to GET /api/live open, and two
// browser contexts are two devices of one user. A sign-in and a sign-out
// on the other device show on this page with no reload; the list stays
// live past the access token's expiry (3 seconds here: the page refreshes
// and connects again); and when the other device ends this page's
// session, the page shows the signed-out view. In cookie mode the
// handshake carries the cookie, in header mode the page sends the access
// token as its first message.
//
//	cd e2e && npm ci && node --test demo-live.test.mjs
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  ACCESS_TTL_MS,
  TEST_TIMEOUT,
  accountPage,
  assertText,
  launch,
  listedSessions,
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

async function passwordForm(page, base, button, email, query) {
  await open(page, base + "/" + query);
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", PASSWORD);
  await page.click(button);
  await signedInAs(page, email);
}

describe("account page, live sessions", { timeout: 4 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDemo(["-email-verification", "optional"]);
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });

  for (const mode of ["cookie", "header"]) {
    const query = mode === "header" ? "?mode=header" : "";
    test(`${mode} mode: the other device's sign-in, sign-out and ending this session`, { timeout: 2 * TEST_TIMEOUT }, () =>
      session(browser, `live-${mode}`, async ({ page, step }) => {
        const email = newEmail(`live-${mode}`);
        let sockets = 0;
        page.on("websocket", (ws) => {
          if (new URL(ws.url()).pathname === "/api/live") sockets++;
        });
        const other = await browser.newContext();
        try {
          const otherPage = await other.newPage();
          await step("sign up", () => passwordForm(page, demo.url, "#signup", email, query));
          await step("account page", async () => {
            await accountPage(page);
            await listedSessions(page, 1);
          });
          await step("sign-in elsewhere shows", async () => {
            await passwordForm(otherPage, demo.url, "#signin", email, query);
            await listedSessions(page, 2);
          });
          await step("live past the access token", async () => {
            // The socket closes when the token it was opened with
            // expires; the page refreshes and connects again.
            await sleep(2 * ACCESS_TTL_MS + 500);
            assert.ok(sockets >= 2, `${sockets} live connections, want the page to have connected again`);
            assert.equal(await page.locator("#account").isVisible(), true);
          });
          await step("sign-out elsewhere shows", async () => {
            await otherPage.click("#signout");
            await signedOutUI(otherPage);
            await listedSessions(page, 1);
          });
          await step("the other device ends this session", async () => {
            await passwordForm(otherPage, demo.url, "#signin", email, query);
            await listedSessions(page, 2);
            await accountPage(otherPage);
            await otherPage.getByRole("button", { name: /^Sign out the session on / }).click();
            await assertText(otherPage, "#status", "Signed out the session on ");
          });
          await step("this page shows it is signed out", async () => {
            await signedOutUI(page);
            await assertText(page, "#status", "Your session was ended by the application.");
          });
        } finally {
          await other.close().catch(() => {});
        }
      }),
    );
  }
});
