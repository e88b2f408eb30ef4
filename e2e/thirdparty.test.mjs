// End-to-end tests of third-party sign-in on the demo's page, against a
// real OpenID provider: oidc-provider (oidc-provider.mjs) on http loopback,
// its development login and consent pages driven in Chromium like a user.
// The demo finds it by discovery (-oidc-issuer) and redeems the code; the
// page finishes the sign-in on its callback page, /auth/callback/oidc.
//
//	cd e2e && npm ci && npm test
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
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
  startDemo,
  startProcess,
} from "./helpers.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const CLIENT_ID = "e2e-demo";
const CLIENT_SECRET = "e2e-demo-secret-0123456789";
const PROVIDER_NAME = "Test Provider";
const SUB = "op-user-42"; // the login typed at the provider
const EMAIL = "ada@provider.example";

// startProvider runs oidc-provider.mjs on a free port, with one client
// whose redirect URI is redirectURI.
async function startProvider(redirectURI) {
  const op = await startProcess(
    "oidc-provider",
    process.execPath,
    [
      path.join(here, "oidc-provider.mjs"),
      ...["--redirect-uri", redirectURI, "--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET],
      ...["--email", EMAIL],
    ],
    /oidc-provider: listening on (http:\/\/\S+)/,
  );
  op.issuer = op.ready[1];
  return op;
}

const isSignInUp = (r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/auth/signinup";

// signInWithProvider clicks "Sign in with <name>" and does what the
// provider's pages ask, until the page has posted the code to /signinup.
// It returns that answer and the provider's pages on the way: "login"
// (the login is the sub), "consent" ("Continue"), or none when the
// provider's session and grant let the browser straight through.
async function signInWithProvider(page, { login = SUB, cancel = false } = {}) {
  const finished = page.waitForResponse(isSignInUp, { timeout: 30_000 });
  await page.getByRole("button", { name: `Sign in with ${PROVIDER_NAME}` }).click();
  const shown = [];
  for (;;) {
    const prompt = await Promise.race([
      finished.then(() => "done"),
      // The provider's pages name themselves in a hidden input.
      page.locator("form input[name=prompt]").getAttribute("value", { timeout: 20_000 }),
    ]);
    if (prompt === "done") break;
    shown.push(prompt);
    assert.ok(shown.length <= 2, `the provider asks again and again: ${shown}`);
    const left = page.waitForEvent("framenavigated", { predicate: (f) => f === page.mainFrame() });
    if (cancel) {
      await page.getByRole("link", { name: "[ Cancel ]" }).click();
      await left;
      return { shown };
    }
    if (prompt === "login") {
      await page.fill("input[name=login]", login);
      await page.fill("input[name=password]", "any password");
      await page.click("button[type=submit]");
    } else if (prompt === "consent") {
      await page.getByRole("button", { name: "Continue" }).click();
    } else {
      assert.fail(`unexpected provider page: ${prompt}`);
    }
    await left;
  }
  const res = await finished;
  assert.equal(res.status(), 200);
  return { shown, body: await res.json() };
}

// backHome checks that the callback page has put the home URL back, so that
// a reload does not present the used code again.
async function backHome(page, home) {
  await page.waitForURL((u) => u.href === home);
}

for (const mode of ["cookie", "header"]) {
  describe(`third-party sign-in with oidc-provider, ${mode} mode`, { timeout: 3 * TEST_TIMEOUT }, () => {
    let op, demo, browser, home;
    before(async () => {
      // The provider must know the demo's callback before the demo knows
      // the provider's issuer: reserve the demo's port first.
      const port = await freePort();
      op = await startProvider(`http://127.0.0.1:${port}/auth/callback/oidc`);
      demo = await startDemo(
        [
          ...["-oidc-issuer", op.issuer, "-oidc-name", PROVIDER_NAME],
          ...["-oidc-client-id", CLIENT_ID, "-oidc-client-secret", CLIENT_SECRET],
        ],
        { port },
      );
      browser = await launch();
      home = mode === "header" ? `${demo.url}/?mode=header` : `${demo.url}/`;
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await demo?.stop();
      await op?.stop();
    });
    const it = (name, fn) =>
      test(name, { timeout: TEST_TIMEOUT }, () => session(browser, `thirdparty-${mode}-${name}`, fn));

    it("sign in, /api/me, reload, sign out, sign in again: the same user", async ({ context, page, step }) => {
      await step("open", () => open(page, home));
      await step("button", () => signedOutUI(page));
      const first = await step("first sign-in", () => signInWithProvider(page));
      await step("first sign-in answer", () => {
        assert.deepEqual(first.shown, ["login", "consent"]);
        assert.equal(first.body.status, "OK", JSON.stringify(first.body));
        assert.equal(first.body.createdNewRecipeUser, true);
        const lm = first.body.user.loginMethods;
        assert.equal(lm.length, 1, JSON.stringify(lm));
        assert.equal(lm[0].recipeId, "thirdparty");
        assert.deepEqual(lm[0].thirdParty, { id: "oidc", userId: SUB });
      });
      const userId = first.body.user.id;
      await step("signed in", async () => {
        await signedInAs(page, EMAIL);
        await assertText(page, "#status", `Account created with ${PROVIDER_NAME}.`);
        await backHome(page, home);
      });
      await step("api/me", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 200, me.body);
        assert.deepEqual(JSON.parse(me.body), { email: EMAIL, userId, tenantId: "public" });
      });
      await step(`${mode} tokens`, async () => {
        const names = (await context.cookies()).map((c) => c.name);
        const [want, notWant] = mode === "header" ? ["st-access-token", "sAccessToken"] : ["sAccessToken", "st-access-token"];
        assert.ok(names.includes(want), `no ${want}; cookies: ${names}`);
        assert.ok(!names.includes(notWant), `${notWant} set; cookies: ${names}`);
      });
      await step("reload keeps session", async () => {
        await open(page, home);
        await signedInAs(page, EMAIL);
      });
      await step("sign out", async () => {
        await page.click("#signout");
        await signedOutUI(page);
        assert.equal((await apiMe(page, demo.url)).status, 401);
      });
      // The provider remembers the user and the consent: no pages this
      // time, or its pages again; either way the same user.
      const again = await step("sign in again", () => signInWithProvider(page));
      await step("same user", async () => {
        assert.equal(again.body.status, "OK", JSON.stringify(again.body));
        assert.equal(again.body.createdNewRecipeUser, false);
        assert.equal(again.body.user.id, userId);
        await signedInAs(page, EMAIL);
        await assertText(page, "#status", `Signed in with ${PROVIDER_NAME}.`);
        await backHome(page, home);
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 200, me.body);
        assert.equal(JSON.parse(me.body).userId, userId);
      });
      // Another browser: the provider's login and consent again, and
      // still the same user.
      const other = await context.browser().newContext();
      try {
        const p2 = await other.newPage();
        p2.setDefaultTimeout(10_000);
        await step("open 2", () => open(p2, home));
        const third = await step("sign in, other browser", () => signInWithProvider(p2));
        await step("same user, other browser", async () => {
          assert.deepEqual(third.shown, ["login", "consent"]);
          assert.equal(third.body.createdNewRecipeUser, false);
          assert.equal(third.body.user.id, userId);
          await signedInAs(p2, EMAIL);
        });
      } finally {
        await other.close();
      }
    });

    it("cancelling at the provider leaves the page signed out", async ({ page, step }) => {
      await step("open", () => open(page, home));
      await step("cancel at the provider", () => signInWithProvider(page, { cancel: true }));
      await step("error shown", async () => {
        await signedOutUI(page);
        await assertText(page, "#status", "access_denied");
        await backHome(page, home);
        assert.equal((await apiMe(page, demo.url)).status, 401);
      });
      await step("the buttons still work", async () => {
        const res = await signInWithProvider(page);
        assert.equal(res.body.status, "OK", JSON.stringify(res.body));
        await signedInAs(page, EMAIL);
      });
    });

    // The used callback URL, opened again (a bookmark, the back button):
    // the SDK's state is still in sessionStorage, so the code goes to the
    // server again, which refuses it; the page says so and stays signed out.
    it("a used callback URL does not sign in again", async ({ page, step }) => {
      await step("open", () => open(page, home));
      let callback;
      page.on("framenavigated", (f) => {
        if (f === page.mainFrame() && new URL(f.url()).pathname === "/auth/callback/oidc") callback = f.url();
      });
      await step("sign in", async () => {
        const res = await signInWithProvider(page);
        assert.equal(res.body.status, "OK", JSON.stringify(res.body));
        await signedInAs(page, EMAIL);
      });
      assert.ok(callback && new URL(callback).searchParams.get("code"), `callback URL: ${callback}`);
      await step("sign out", async () => {
        await page.click("#signout");
        await signedOutUI(page);
      });
      await step("open the used callback URL", async () => {
        const replay = page.waitForResponse(isSignInUp);
        await page.goto(callback);
        const body = await (await replay).json();
        assert.equal(body.status, "GENERAL_ERROR", JSON.stringify(body));
        await signedOutUI(page);
        await assertText(page, "#status", "Sign-in with the provider failed. Please try again.");
        assert.equal((await apiMe(page, demo.url)).status, 401);
      });
    });
  });
}

describe("no provider configured", { timeout: 2 * TEST_TIMEOUT }, () => {
  let demo, browser;
  before(async () => {
    demo = await startDemo();
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await demo?.stop();
  });
  test("the page shows no provider buttons", { timeout: TEST_TIMEOUT }, () =>
    session(browser, "thirdparty-none", async ({ page, step }) => {
      const methods = await step("loginmethods", async () => {
        const res = await fetch(`${demo.url}/auth/loginmethods`, { signal: AbortSignal.timeout(10_000) });
        return res.json();
      });
      assert.deepEqual(methods.thirdParty, { enabled: false, providers: [] });
      await step("open", () => open(page, `${demo.url}/`));
      await step("signed out, no buttons", async () => {
        await signedOutUI(page);
        assert.equal(await page.locator("#providers").isVisible(), false);
        assert.equal(await page.locator("#providers button").count(), 0);
        assert.equal(await page.locator("#signin").isVisible(), true);
      });
    }),
  );
});
