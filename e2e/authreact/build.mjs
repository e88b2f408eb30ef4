// Bundles app.jsx with esbuild into outdir/app.js.
//
//	node authreact/build.mjs [outdir]   (default authreact/dist)
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));

export async function build(outdir = path.join(here, "dist")) {
  await esbuild.build({
    entryPoints: [path.join(here, "app.jsx")],
    outfile: path.join(outdir, "app.js"),
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  });
  return path.join(outdir, "app.js");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await build(process.argv[2] ? path.resolve(process.argv[2]) : undefined));
}
