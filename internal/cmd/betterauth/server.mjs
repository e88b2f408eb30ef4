// Better Auth with email and password, hashing with @node-rs/argon2 at the
// library's argon2id parameters (m=19456 KiB, t=2, p=1), on PostgreSQL: the
// peer that the loadtest phase signin-betterauth measures sign-ins against.
//
//	cd internal/cmd/betterauth && npm ci
//	go run ./internal/cmd/loadtest -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	    -phases signin,signin-betterauth -betterauth internal/cmd/betterauth/server.mjs
//
// It creates a database of its own, ba_bench_<pid>, on the server of
// BA_DATABASE_URL (default the test DSN above), creates Better Auth's tables
// in it with getMigrations, listens on a free loopback port, prints
// "betterauth: listening on http://127.0.0.1:PORT", and drops the database
// on SIGTERM or SIGINT. Rate limiting is off: the load signs the same users
// in from one address, as the demo's phase does.
import http from "node:http";
import pg from "pg";
import { hash, verify } from "@node-rs/argon2";
import { betterAuth } from "better-auth";
import { toNodeHandler } from "better-auth/node";
import { getMigrations } from "better-auth/db/migration";

const argon2 = { algorithm: 2 /* Argon2id */, memoryCost: 19456, timeCost: 2, parallelism: 1 };
const adminURL = process.env.BA_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test?sslmode=disable";
const dbName = `ba_bench_${process.pid}`;

const admin = new pg.Client({ connectionString: adminURL });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const dbURL = new URL(adminURL);
dbURL.pathname = "/" + dbName;
const pool = new pg.Pool({ connectionString: dbURL.toString() });

let dropped = false;
async function dropDatabase() {
  if (dropped) return;
  dropped = true;
  await pool.end().catch(() => {});
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((e) => console.error("betterauth: drop:", e.message));
  await admin.end().catch(() => {});
}

let server;
try {
  const options = {
    baseURL: "http://127.0.0.1",
    secret: "loadtest-only-secret-loadtest-only-secret",
    database: pool,
    emailAndPassword: {
      enabled: true,
      password: {
        hash: (password) => hash(password, argon2),
        verify: ({ hash: h, password }) => verify(h, password),
      },
    },
    rateLimit: { enabled: false },
    logger: { level: "error" },
  };
  const { runMigrations } = await getMigrations(options);
  await runMigrations();
  const auth = betterAuth(options);
  server = http.createServer(toNodeHandler(auth));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  console.log(`betterauth: listening on http://127.0.0.1:${server.address().port}`);
} catch (e) {
  console.error("betterauth:", e);
  await dropDatabase();
  process.exit(1);
}

for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, async () => {
    server.closeAllConnections?.();
    server.close();
    await dropDatabase();
    process.exit(0);
  });
}
