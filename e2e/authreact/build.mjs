// Bundles app.jsx (or another entry: mfa.jsx, roles.jsx, tenants.jsx) with
// esbuild into outdir/<entry>.js.
//
//	node authreact/build.mjs [outdir] [entry]   (default authreact/dist, app)
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));

export async function build(outdir = path.join(here, "dist"), entry = "app") {
  await esbuild.build({
    entryPoints: [path.join(here, `${entry}.jsx`)],
    outfile: path.join(outdir, `${entry}.js`),
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  });
  return path.join(outdir, `${entry}.js`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await build(process.argv[2] ? path.resolve(process.argv[2]) : undefined, process.argv[3] || undefined));
}
