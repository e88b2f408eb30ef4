// What the end-to-end tests share: the demo binary, built once and run on a
// free port; Chromium; a browser context per test with failure screenshots;
// and the page actions every test uses.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { spawn, execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, mkdir } from "node:fs/promises";
import { once } from "node:events";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const shots = path.join(here, "screenshots");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
export const ACCESS_TTL_MS = 3000;
export const TEST_TIMEOUT = 60_000;

// ---- the demo binary, built once -------------------------------------------

let built;
export function buildDemo() {
  built ??= (async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "auth-e2e-"));
    const bin = path.join(dir, "demo");
    await promisify(execFile)("go", ["build", "-o", bin, "./examples/demo"], { cwd: repo, timeout: 180_000 });
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    return bin;
  })();
  return built;
}

export async function freePort() {
  const srv = net.createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// startDemo runs the demo on a free port, or on port, and collects its
// standard output, where the log mailer prints the reset emails.
export async function startDemo(extraArgs = [], { port } = {}) {
  const bin = await buildDemo();
  port ??= await freePort();
  const addr = `127.0.0.1:${port}`;
  const demo = await startProcess(
    "demo",
    bin,
    ["-addr", addr, "-db", "memory", "-access-ttl", `${ACCESS_TTL_MS / 1000}s`, ...extraArgs],
    /demo: listening on http:\/\//,
  );
  return Object.assign(demo, { url: `http://${addr}`, port });
}

// startProcess runs a server and waits until its standard output matches
// ready. It returns { proc, stdout, stderr, ready, stop }, where stdout
// and stderr keep growing, ready is the match, and stop ends the process.
export async function startProcess(name, cmd, args, ready) {
  const proc = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  const p = { proc, stdout: "", stderr: "" };
  proc.stdout.setEncoding("utf8").on("data", (d) => (p.stdout += d));
  proc.stderr.setEncoding("utf8").on("data", (d) => (p.stderr += d));
  p.stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await once(proc, "exit").catch(() => {});
      clearTimeout(t);
    }
  };
  const deadline = Date.now() + 15_000;
  while (!(p.ready = p.stdout.match(ready))) {
    if (proc.exitCode !== null) throw new Error(`${name} exited ${proc.exitCode}: ${p.stderr}`);
    if (Date.now() > deadline) {
      await p.stop();
      throw new Error(`${name} did not start: ${p.stdout}${p.stderr}`);
    }
    await sleep(50);
  }
  return p;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the browser -------------------------------------------------------------

export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    timeout: 30_000,
  });
}

// session opens a fresh browser context (no shared cookies) and runs fn with
// a step helper that names the step a failure screenshot is saved under.
export async function session(browser, name, fn) {
  const context = await browser.newContext();
  context.setDefaultTimeout(10_000);
  context.setDefaultNavigationTimeout(15_000);
  const page = await context.newPage();
  const refreshes = [];
  const consoleLog = [];
  page.on("response", (res) => {
    if (res.request().method() === "POST" && new URL(res.url()).pathname === "/auth/session/refresh") {
      refreshes.push(res.status());
    }
  });
  page.on("console", (m) => consoleLog.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => consoleLog.push(`pageerror: ${e.message}`));
  let current = "start";
  const step = async (label, f) => {
    current = label;
    return f();
  };
  try {
    await fn({ context, page, step, refreshes, ok200: () => refreshes.filter((s) => s === 200).length });
  } catch (err) {
    await mkdir(shots, { recursive: true });
    const file = path.join(shots, `${name}--${current}`.replace(/[^a-z0-9.-]+/gi, "_") + ".png");
    await page.screenshot({ path: file, fullPage: true, timeout: 5000 }).catch(() => {});
    err.message += `\n  step: ${current}\n  screenshot: ${file}\n  console:\n    ${consoleLog.join("\n    ")}`;
    throw err;
  } finally {
    await context.close().catch(() => {});
  }
}

// ---- page actions ------------------------------------------------------------

export async function open(page, url) {
  await page.goto(url);
  await page.locator("#loading").waitFor({ state: "hidden" });
}

export async function signedOutUI(page) {
  await page.locator("#signed-out").waitFor({ state: "visible" });
  assert.equal(await page.locator("#signed-in").isVisible(), false);
}

export async function signedInAs(page, email) {
  await page.locator("#signed-in").waitFor({ state: "visible" });
  await assertText(page, "#me-email", email);
}

export async function assertText(page, sel, want) {
  const loc = page.locator(sel);
  await loc.filter({ hasText: want }).waitFor({ state: "visible" }).catch(async () => {
    assert.fail(`${sel}: want ${JSON.stringify(want)}, have ${JSON.stringify(await loc.textContent().catch(() => null))}`);
  });
}

// accountPage opens the account page from the signed-in view's link.
export async function accountPage(page) {
  await page.getByRole("link", { name: "Account" }).click();
  await page.locator("#account").waitFor({ state: "visible" });
  await page.waitForURL(/\/account(\?mode=header)?$/);
}

// listedSessions waits until the account page lists n sessions, with no
// reload.
export async function listedSessions(page, n) {
  const items = page.locator("#account-sessions li");
  for (let i = 0; i < 100; i++) {
    if ((await items.count()) === n) return;
    await sleep(100);
  }
  assert.fail(`want ${n} sessions listed, have: ${(await items.allTextContents()).join(" | ")}`);
}

// apiMe calls GET /api/me from the page: through the SDK's fetch interceptor.
export function apiMe(page, api) {
  return page.evaluate(async (api) => {
    const res = await fetch(api + "/api/me", { credentials: "include" });
    return { status: res.status, body: await res.text() };
  }, api);
}

// ---- passkeys ----------------------------------------------------------------

// virtualAuthenticator gives page (Chromium only) a virtual WebAuthn
// authenticator through the DevTools protocol's WebAuthn domain: a
// platform authenticator that keeps passkeys (resident keys) and verifies
// the user without a prompt. options override those defaults. It returns
// { id, send(method, params), credentials() }: send calls a WebAuthn.*
// method with the authenticator's id, credentials lists what it holds.
export async function virtualAuthenticator(page, options = {}) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
      ...options,
    },
  });
  const send = (method, params = {}) => cdp.send(method, { authenticatorId, ...params });
  return {
    id: authenticatorId,
    send,
    credentials: async () => (await send("WebAuthn.getCredentials")).credentials,
  };
}

// totp is the code of a base32 secret at time t (ms), as an authenticator
// app computes it: RFC 6238, HMAC-SHA-1, six digits, 30-second steps.
export function totp(secret, t = Date.now()) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  const key = [];
  let bits = 0;
  let value = 0;
  for (const ch of secret.replace(/[\s=]/g, "").toUpperCase()) {
    const i = alphabet.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${secret}`);
    value = ((value << 5) | i) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      key.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(t / 30_000)));
  const h = createHmac("sha1", Buffer.from(key)).update(counter).digest();
  const o = h[h.length - 1] & 0xf;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1_000_000).padStart(6, "0");
}
