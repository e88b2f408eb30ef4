// End-to-end tests of the demo's web page (supertokens-web-js) in Chromium,
// in cookie mode and in header mode (/?mode=header), against the real demo
// binary with an in-memory store and a 3s access token lifetime.
//
//	cd e2e && npm ci && npm test
//
// Needs Go (to build ./examples/demo) and Chromium (CHROMIUM, default
// /usr/bin/chromium). Screenshots of failed steps go to e2e/screenshots/.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
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
} from "./helpers.mjs";

const LEEWAY_MS = 5000; // the server's clock leeway on access token expiry
const PASSWORD = "correct horse 1";

// ---- the demo's output -------------------------------------------------------

// resetLink waits for the reset email to email in the demo's output and
// returns its link.
async function resetLink(demo, email, timeout = 10_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const m of demo.stdout.matchAll(/--- email\n([\s\S]*?)\n---\n/g)) {
      if (!m[1].includes(`To: ${email}`) && !m[1].includes(`<${email}>`)) continue;
      const link = m[1].match(/https?:\/\/\S+\/auth\/reset-password\?\S+/);
      if (link) return link[0];
    }
    if (Date.now() > deadline) throw new Error(`no reset email to ${email} in the demo's output:\n${demo.stdout}`);
    await sleep(100);
  }
}

let seq = 0;
const newEmail = (tag) => `${tag}-${process.pid}-${Date.now()}-${++seq}@example.com`;

// ---- page actions ------------------------------------------------------------

async function submitAuth(page, button, email, password) {
  await signedOutUI(page);
  await page.fill("#email", email);
  await page.fill("#password", password);
  await page.click(button);
}

async function signUp(page, email, password = PASSWORD) {
  await submitAuth(page, "#signup", email, password);
  await signedInAs(page, email);
}

async function signIn(page, email, password = PASSWORD) {
  await submitAuth(page, "#signin", email, password);
  await signedInAs(page, email);
}

// refreshToken reads the page's current refresh token: the sRefreshToken
// cookie in cookie mode, the SDK's st-refresh-token script cookie in header
// mode.
async function refreshToken(context, page, mode) {
  if (mode === "cookie") {
    const c = (await context.cookies()).find((c) => c.name === "sRefreshToken");
    return c && c.value;
  }
  return page.evaluate(() => {
    for (const kv of document.cookie.split("; ")) {
      const i = kv.indexOf("=");
      if (kv.slice(0, i) === "st-refresh-token") return kv.slice(i + 1);
    }
    return undefined;
  });
}

// ---- the tests ---------------------------------------------------------------

for (const mode of ["cookie", "header"]) {
  describe(`${mode} mode`, { timeout: 5 * TEST_TIMEOUT * 2 }, () => {
    let demo, browser, home;
    before(async () => {
      demo = await startDemo();
      browser = await launch();
      home = mode === "header" ? `${demo.url}/?mode=header` : `${demo.url}/`;
    });
    after(async () => {
      await browser?.close().catch(() => {});
      await demo?.stop();
    });
    const it = (name, fn) =>
      test(name, { timeout: TEST_TIMEOUT }, () => session(browser, `${mode}-${name}`, fn));

    it("sign up, sign in, signed in as", async ({ context, page, step }) => {
      const email = newEmail("up");
      await step("open", () => open(page, home));
      await step("sign up", () => signUp(page, email));
      await step("status", () => assertText(page, "#status", "Account created."));
      if (mode === "header") {
        await step("no session cookies", async () => {
          const names = (await context.cookies()).map((c) => c.name);
          assert.ok(!names.includes("sAccessToken"), `cookies: ${names}`);
          assert.ok(names.includes("st-access-token"), `cookies: ${names}`);
        });
      }
      // A second browser signs in with the same account.
      const other = await context.browser().newContext();
      try {
        const p2 = await other.newPage();
        p2.setDefaultTimeout(10_000);
        await step("open 2", () => open(p2, home));
        await step("wrong password", async () => {
          await submitAuth(p2, "#signin", email, "not the password");
          await assertText(p2, "#status", "Wrong email or password.");
        });
        await step("sign in", () => signIn(p2, email));
        await step("reload keeps session", async () => {
          await open(p2, home);
          await signedInAs(p2, email);
        });
      } finally {
        await other.close();
      }
    });

    it("expired access token is refreshed transparently", async ({ page, step, ok200 }) => {
      const email = newEmail("refresh");
      await step("open", () => open(page, home));
      await step("sign up", () => signUp(page, email));
      const before = ok200();
      await step("wait for expiry", () => sleep(ACCESS_TTL_MS + 1000));
      await step("reload", async () => {
        await open(page, home);
        await signedInAs(page, email);
      });
      await step("refreshed", () => assert.ok(ok200() > before, `refreshes with 200: ${ok200()} (before ${before})`));
      // A reload refreshes as soon as the front-token's expiry has passed
      // (doesSessionExist); a plain fetch does not: it refreshes on a 401,
      // and the server accepts an access token until 5s after its expiry
      // (leeway). So wait past that, then call /api/me: 401, refresh, retry.
      const mid = ok200();
      await step("wait for expiry and leeway", () => sleep(ACCESS_TTL_MS + LEEWAY_MS + 1000));
      await step("api/me again", async () => {
        const me = await apiMe(page, new URL(home).origin);
        assert.equal(me.status, 200, me.body);
        assert.equal(JSON.parse(me.body).email, email);
      });
      await step("refreshed 2", () => assert.ok(ok200() > mid, `refreshes with 200: ${ok200()} (before ${mid})`));
    });

    it("password reset from the page", async ({ page, step }) => {
      const email = newEmail("reset");
      const newPassword = "new horse 2";
      await step("open", () => open(page, home));
      await step("sign up", () => signUp(page, email));
      await step("sign out", async () => {
        await page.click("#signout");
        await signedOutUI(page);
      });
      await step("request email", async () => {
        await page.fill("#forgot-email", email);
        await page.click("#forgot-form button[type=submit]");
        await assertText(page, "#status", "If that email has an account, a reset link is on its way.");
      });
      const link = await step("read link", () => resetLink(demo, email));
      const u = new URL(link);
      assert.equal(u.origin, demo.url);
      assert.equal(u.searchParams.get("tenantId"), "public");
      assert.ok(u.searchParams.get("token"));
      // The link with ?mode added; as emailed, without it, is the next test.
      if (mode === "header") u.searchParams.set("mode", "header");
      await step("open link", async () => {
        await open(page, u.href);
        await page.locator("#reset").waitFor({ state: "visible" });
      });
      await step("set password", async () => {
        await page.fill("#new-password", newPassword);
        await page.click("#reset-form button[type=submit]");
        await assertText(page, "#status", "Your password is changed. Sign in with the new one.");
      });
      await step("link used twice", async () => {
        await page.fill("#new-password", "third horse 3");
        await page.click("#reset-form button[type=submit]");
        await assertText(page, "#status", "This link has expired or was used already.");
      });
      await step("back home", async () => {
        await page.click("#home");
        await page.locator("#loading").waitFor({ state: "hidden" });
        if (mode === "header") assert.match(page.url(), /mode=header/);
      });
      await step("old password refused", async () => {
        await submitAuth(page, "#signin", email, PASSWORD);
        await assertText(page, "#status", "Wrong email or password.");
      });
      await step("sign in with new password", () => signIn(page, email, newPassword));
    });

    // The emailed link has no mode (its format is the SDKs'), so the reset
    // page must take the mode the page was used in, in the same browser. In
    // cookie mode, a header mode used earlier in that browser must not stick.
    // The page shows its mode in #mode.
    it("reset link as emailed opens in the page's mode", async ({ context, page, step }) => {
      const email = newEmail("reset-mode");
      const newPassword = "new horse 2";
      const other = mode === "header" ? "cookie" : "header";
      if (mode === "cookie") await step("header mode first", () => open(page, `${demo.url}/?mode=header`));
      await step("open", async () => {
        await open(page, home);
        await assertText(page, "#mode", `Token transfer: ${mode}`);
      });
      await step("sign up", () => signUp(page, email));
      await step("sign out", async () => {
        await page.click("#signout");
        await signedOutUI(page);
      });
      await step("request email", async () => {
        await page.fill("#forgot-email", email);
        await page.click("#forgot-form button[type=submit]");
        await assertText(page, "#status", "If that email has an account, a reset link is on its way.");
      });
      const link = await step("read link", () => resetLink(demo, email));
      assert.equal(new URL(link).searchParams.has("mode"), false, link);
      // An explicit ?mode wins, and does not change what is remembered.
      await step("open link with the other mode", async () => {
        const u = new URL(link);
        u.searchParams.set("mode", other);
        await open(page, u.href);
        await page.locator("#reset").waitFor({ state: "visible" });
        await assertText(page, "#mode", `Token transfer: ${other}`);
      });
      await step("open link as emailed", async () => {
        await open(page, link);
        await page.locator("#reset").waitFor({ state: "visible" });
        await assertText(page, "#mode", `Token transfer: ${mode}`);
      });
      await step("set password", async () => {
        const sent = page.waitForRequest(
          (r) => r.method() === "POST" && new URL(r.url()).pathname === "/auth/user/password/reset",
        );
        await page.fill("#new-password", newPassword);
        await page.click("#reset-form button[type=submit]");
        assert.equal((await sent).headers()["st-auth-mode"], mode, "the SDK's st-auth-mode on the reset request");
        await assertText(page, "#status", "Your password is changed. Sign in with the new one.");
      });
      await step("back home", async () => {
        await page.click("#home");
        await page.waitForURL((u) => u.pathname === "/");
        await page.locator("#loading").waitFor({ state: "hidden" });
        await assertText(page, "#mode", `Token transfer: ${mode}`);
      });
      await step("sign in with new password", () => signIn(page, email, newPassword));
      await step(`${mode} tokens`, async () => {
        const names = (await context.cookies()).map((c) => c.name);
        const [want, notWant] = mode === "header" ? ["st-access-token", "sAccessToken"] : ["sAccessToken", "st-access-token"];
        assert.ok(names.includes(want), `no ${want}; cookies: ${names}`);
        assert.ok(!names.includes(notWant), `${notWant} set; cookies: ${names}`);
      });
    });

    it("sign out ends the session in the page and on the server", async ({ context, page, step }) => {
      const email = newEmail("out");
      await step("open", () => open(page, home));
      await step("sign up", () => signUp(page, email));
      await step("api/me before", async () => {
        assert.equal((await apiMe(page, demo.url)).status, 200);
      });
      await step("sign out", async () => {
        await page.click("#signout");
        await signedOutUI(page);
        await assertText(page, "#status", "Signed out.");
      });
      await step("api/me after", async () => {
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 401, me.body);
      });
      await step("tokens gone", async () => {
        const names = (await context.cookies()).map((c) => c.name);
        for (const n of ["sAccessToken", "sRefreshToken", "st-access-token", "st-refresh-token"]) {
          assert.ok(!names.includes(n), `cookie ${n} left after sign out: ${names}`);
        }
      });
      await step("reload", async () => {
        await open(page, home);
        await signedOutUI(page);
      });
    });

    it("replaying a stale refresh token is token theft", async ({ context, page, step, ok200 }) => {
      const email = newEmail("theft");
      await step("open", () => open(page, home));
      await step("sign up", () => signUp(page, email));
      const old = await step("read refresh token", () => refreshToken(context, page, mode));
      assert.ok(old, "no refresh token in the browser");
      const before = ok200();
      await step("wait for expiry", () => sleep(ACCESS_TTL_MS + 1000));
      await step("refresh through the page", async () => {
        await open(page, home);
        await signedInAs(page, email);
        assert.ok(ok200() > before, "no refresh happened");
      });
      const current = await refreshToken(context, page, mode);
      assert.ok(current && current !== old, "refresh token did not rotate");
      const res = await step("replay", () =>
        fetch(`${demo.url}/auth/session/refresh`, {
          method: "POST",
          headers:
            mode === "header"
              ? { Authorization: `Bearer ${old}`, "st-auth-mode": "header", rid: "session" }
              : { Cookie: `sRefreshToken=${old}`, rid: "session" },
          signal: AbortSignal.timeout(10_000),
        }),
      );
      const body = await res.text();
      assert.equal(res.status, 401, body);
      assert.equal(JSON.parse(body).message, "token theft detected");
      // Access tokens are checked by signature alone (README): the page's
      // current one works until it expires; then its refresh fails, and the
      // page shows the signed-out UI. Reload until then (TTL + 5s leeway).
      await step("page reports signed out", async () => {
        const deadline = Date.now() + ACCESS_TTL_MS + LEEWAY_MS + 8000;
        for (;;) {
          await open(page, home);
          if (await page.locator("#signed-out").isVisible()) break;
          if (Date.now() > deadline) assert.fail("page still signed in after token theft");
          await sleep(1000);
        }
        const me = await apiMe(page, demo.url);
        assert.equal(me.status, 401, me.body);
      });
    });
  });
}

// ---- a page on another origin ------------------------------------------------

// pageServer serves the demo's page on its own port, pointed at the API by
// <meta name="api-domain">, and proxies /static/app.js from the demo.
async function pageServer(api, port = 0) {
  const index = await (await fetch(api + "/")).text();
  const html = index.replace(
    /<meta name="api-domain" content="[^"]*">/,
    `<meta name="api-domain" content="${api}">`,
  );
  assert.notEqual(html, index, "index.html has no api-domain meta");
  const srv = http.createServer(async (req, res) => {
    const u = new URL(req.url, "http://x");
    if (req.method === "GET" && (u.pathname === "/" || u.pathname === "/auth/reset-password")) {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache" });
      res.end(html);
    } else if (req.method === "GET" && u.pathname === "/static/app.js") {
      try {
        const r = await fetch(api + "/static/app.js");
        res.writeHead(r.status, { "Content-Type": r.headers.get("content-type") || "text/javascript" });
        res.end(Buffer.from(await r.arrayBuffer()));
      } catch (e) {
        res.writeHead(502).end(String(e));
      }
    } else {
      res.writeHead(404).end("not found");
    }
  });
  srv.listen(port, "127.0.0.1");
  await once(srv, "listening");
  port = srv.address().port;
  return { url: `http://127.0.0.1:${port}`, port, close: () => new Promise((r) => srv.close(r)) };
}

// SameSite=Lax suffices for another port of the same host; None is what a
// page on another site needs (Secure: Chromium treats 127.0.0.1 as secure).
for (const sameSite of ["lax", "none"]) describe(`page on another origin, SameSite=${sameSite}`, { timeout: 4 * TEST_TIMEOUT }, () => {
  let demo, pages, browser;
  before(async () => {
    // The page's port is needed for -allowed-origin before the demo runs,
    // and the page server needs the demo: reserve the port, start the demo,
    // then the page server on that port.
    const pagePort = await freePort();
    demo = await startDemo(["-allowed-origin", `http://127.0.0.1:${pagePort}`, "-samesite", sameSite]);
    pages = await pageServer(demo.url, pagePort);
    browser = await launch();
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await pages?.close();
    await demo?.stop();
  });

  for (const mode of ["header", "cookie"]) {
    test(`${mode} mode: sign up, /api/me, refresh, sign out`, { timeout: TEST_TIMEOUT }, () =>
      session(browser, `cross-origin-${sameSite}-${mode}`, async ({ context, page, step, ok200 }) => {
        const home = mode === "header" ? `${pages.url}/?mode=header` : `${pages.url}/`;
        const email = newEmail(`xo-${sameSite}-${mode}`);
        await step("open", () => open(page, home));
        await step("api shown", () => assertText(page, "#api", `API: ${demo.url}`));
        await step("sign up", () => signUp(page, email));
        await step("api/me", async () => {
          const me = await apiMe(page, demo.url);
          assert.equal(me.status, 200, me.body);
          assert.equal(JSON.parse(me.body).email, email);
        });
        const before = ok200();
        await step("wait for expiry", () => sleep(ACCESS_TTL_MS + 1000));
        await step("reload", async () => {
          await open(page, home);
          await signedInAs(page, email);
          assert.ok(ok200() > before, "no refresh happened");
        });
        await step("sign out", async () => {
          await page.click("#signout");
          await signedOutUI(page);
          assert.equal((await apiMe(page, demo.url)).status, 401);
        });
      }),
    );
  }
});
