// Serves the bundle: /app.js is the bundle, any other path is index.html
// with the page's settings (see app.jsx) written in.
//
//	node authreact/server.mjs --api http://127.0.0.1:8080 [--port 3000] [--mode header] [--resend-gap 15] [--recipe webauthn|mfa|roles|tenants]
//
// builds the bundle into authreact/dist and serves it on 127.0.0.1. With
// --recipe webauthn (passkeys), open it as http://localhost:PORT and give
// --api as http://localhost:DEMO_PORT: browsers refuse WebAuthn on IP
// addresses. --recipe mfa serves the other app, mfa.jsx (password, then
// TOTP or a passkey), named localhost too; --recipe roles the app of
// roles.jsx (password, then a page for the role admin: run the demo with
// -admin). --recipe tenants serves tenants.jsx, the sign-in page of the
// tenant of ?tenantId=, named localhost; it passes /dev/ through to the
// demo, whose development providers live on the app's URL: run the demo
// with -dev -tenants -app-url http://localhost:PORT.
import http from "node:http";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

// serveApp serves bundle (a path to app.js) with config on 127.0.0.1:port
// (0: any free port) and returns { url, port, close }. url names host, by
// default 127.0.0.1; "localhost" for pages that use passkeys. With proxy,
// an origin, requests under /dev/ go there as they came: the demo's
// development providers are served on the app's URL (-app-url), where
// their issuer, sign-in page and redirect URI must be.
export async function serveApp(bundle, config, { port = 0, host = "127.0.0.1", proxy } = {}) {
  const js = await readFile(bundle);
  // "<" is escaped so that no value can end the script element.
  const json = JSON.stringify(config).replace(/</g, "\\u003c");
  const html = (await readFile(path.join(here, "index.html"), "utf8")).replace("{{CONFIG}}", json);
  const srv = http.createServer((req, res) => {
    const { pathname } = new URL(req.url, "http://x");
    if (proxy && pathname.startsWith("/dev/")) {
      passThrough(req, res, proxy);
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD" }).end();
      return;
    }
    if (pathname === "/app.js") {
      res.writeHead(200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "no-store" }).end(js);
      return;
    }
    if (pathname === "/favicon.ico") {
      res.writeHead(204).end();
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" }).end(html);
  });
  srv.listen(port, "127.0.0.1");
  await once(srv, "listening");
  const addr = srv.address();
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    close: () => new Promise((r) => srv.close(r)),
  };
}

// passThrough sends req to origin, Host and Origin headers unchanged (the
// demo answers the app URL's host, and its provider's form checks the
// Origin), and copies the answer back, redirects included.
function passThrough(req, res, origin) {
  const target = new URL(req.url, origin);
  const out = http.request(target, { method: req.method, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode, answer.headers);
    answer.pipe(res);
  });
  out.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502, { "Content-Type": "text/plain; charset=utf-8" });
    res.end(`proxy: ${err.message}`);
  });
  req.pipe(out);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { parseArgs } = await import("node:util");
  const { values } = parseArgs({
    options: {
      api: { type: "string" },
      port: { type: "string", default: "3000" },
      mode: { type: "string", default: "cookie" },
      "resend-gap": { type: "string" },
      recipe: { type: "string", default: "passwordless" },
    },
  });
  if (!values.api) {
    console.error(
      "usage: node authreact/server.mjs --api http://127.0.0.1:8080 [--port 3000] [--mode header] [--resend-gap 15] [--recipe webauthn|mfa|roles|tenants]",
    );
    process.exit(2);
  }
  const { build } = await import("./build.mjs");
  const ownApp = ["mfa", "roles", "tenants"].includes(values.recipe);
  const onLocalhost = ["webauthn", "mfa", "tenants"].includes(values.recipe);
  const app = await serveApp(
    await build(undefined, ownApp ? values.recipe : "app"),
    {
      apiDomain: values.api,
      mode: values.mode,
      resendGap: values["resend-gap"] ? Number(values["resend-gap"]) : undefined,
      recipe: values.recipe,
    },
    {
      port: Number(values.port),
      host: onLocalhost ? "localhost" : "127.0.0.1",
      proxy: values.recipe === "tenants" ? values.api : undefined,
    },
  );
  console.log(`authreact: serving on ${app.url}`);
}
