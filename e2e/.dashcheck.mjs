// A one-off check of the SuperTokens dashboard app against the demo (not committed).
import { chromium } from "playwright-core";
const base = process.env.DEMO, key = process.env.KEY;
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
const page = await browser.newPage();
const log = [];
page.on("console", (m) => log.push(`${m.type()}: ${m.text()}`));
page.on("pageerror", (e) => log.push(`pageerror: ${e.message}`));
page.on("response", (r) => { if (r.url().includes("/dashboard/api/")) log.push(`${r.request().method()} ${new URL(r.url()).pathname}${new URL(r.url()).search} ${r.status()}`); });
try {
  await page.goto(base + "/auth/dashboard");
  await page.waitForTimeout(3000);
  await page.screenshot({ path: "/tmp/dash-1-signin.png", fullPage: true });
  const input = page.locator("input").first();
  await input.fill(key);
  await page.keyboard.press("Enter");
  await page.waitForTimeout(4000);
  await page.screenshot({ path: "/tmp/dash-2-users.png", fullPage: true });
  const body = await page.locator("body").innerText();
  console.log("USERS PAGE TEXT:", body.slice(0, 1500));
  const first = page.getByText("ada@example.com").first();
  await first.click();
  await page.waitForTimeout(4000);
  await page.screenshot({ path: "/tmp/dash-3-user.png", fullPage: true });
  console.log("USER PAGE TEXT:", (await page.locator("body").innerText()).slice(0, 2000));
} catch (e) {
  console.log("ERROR", e.message);
} finally {
  console.log(log.join("\n"));
  await browser.close();
}
