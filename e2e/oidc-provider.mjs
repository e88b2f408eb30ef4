// A real OpenID provider (the oidc-provider package) on http loopback, for
// the third-party sign-in test, thirdparty.test.mjs; also by hand, to try
// the demo with a provider:
//
//	node e2e/oidc-provider.mjs --port 9000 --redirect-uri http://127.0.0.1:8080/auth/callback/oidc
//	go run ./examples/demo -db memory -oidc-issuer http://127.0.0.1:9000 \
//	  -oidc-client-id demo -oidc-client-secret demo-secret
//
// It knows one client (--client-id, --client-secret, client_secret_basic or
// client_secret_post, the authorization code grant, PKCE as the client
// chooses). Its development login page takes any login and password; the
// login is the user's sub (oidc-provider's account id), with email --email,
// verified; then "Continue" on the consent page. The ID token carries the
// email (conformIdTokenClaims off), as the library reads it from there.
//
// It prints "oidc-provider: listening on <issuer>" when ready, and stops on
// SIGTERM or SIGINT. Everything is in memory.
import http from "node:http";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { once } from "node:events";
import { parseArgs } from "node:util";
import Provider from "oidc-provider";

const { values: opt } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    "redirect-uri": { type: "string", multiple: true, default: [] },
    "client-id": { type: "string", default: "demo" },
    "client-secret": { type: "string", default: "demo-secret" },
    email: { type: "string", default: "ada@provider.example" },
  },
});
if (opt["redirect-uri"].length === 0) {
  console.error("oidc-provider: --redirect-uri is required, as in http://127.0.0.1:8080/auth/callback/oidc");
  process.exit(2);
}

// The issuer names the port, so listen first, then make the provider.
const server = http.createServer();
server.listen(Number(opt.port), "127.0.0.1");
await once(server, "listening");
const issuer = `http://127.0.0.1:${server.address().port}`;

// A fresh signing key, rather than the package's development keys.
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: randomBytes(6).toString("hex"), use: "sig", alg: "RS256" };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: opt["client-id"],
      client_secret: opt["client-secret"],
      redirect_uris: opt["redirect-uri"],
      response_types: ["code"],
      grant_types: ["authorization_code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: opt.email, email_verified: true };
      },
    };
  },
  claims: { openid: ["sub"], email: ["email", "email_verified"] },
  scopes: ["openid", "email"],
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  jwks: { keys: [jwk] },
  cookies: { keys: [randomBytes(32).toString("hex")] },
});
provider.on("server_error", (_ctx, err) => console.error("oidc-provider: server error:", err));
server.on("request", provider.callback());

console.log(`oidc-provider: listening on ${issuer}`);
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
