/**
 * Session signing keys for the auth service as a JWKS (see lib/session.ts and services/auth/README.md).
 * The chart needs none of this: it creates a PEM key itself. FILE may be a private JWKS or PEM keys.
 *
 *   node scripts/sessionKeys.ts > keys.json          a new private JWKS with one key
 *   node scripts/sessionKeys.ts --public keys.json   the public JWKS, for the proxy
 *   node scripts/sessionKeys.ts --rotate keys.json   keys.json with a new signing key first
 *   node scripts/sessionKeys.ts --prune keys.json    keys.json with only its active (first) key
 *
 * Output goes to stdout so the private keys only land where the admin redirects them.
 */
import { generateSigningKey, loadSigningKeys, publicJwks } from "../lib/session.ts";

const usage = `usage:
  node scripts/sessionKeys.ts                  print a new private JWKS (one ES256 key)
  node scripts/sessionKeys.ts --public FILE    print the public JWKS of a private key file (JWKS or PEM)
  node scripts/sessionKeys.ts --rotate FILE    print FILE with a new key first (the new signer)
  node scripts/sessionKeys.ts --prune FILE     print FILE with only its first (active) key`;

async function run(args: string[]): Promise<string> {
  const [command, file, ...rest] = args;
  if (command === undefined) return JSON.stringify({ keys: [await generateSigningKey()] }, null, 2);
  if (command === "--help" || command === "-h") return usage;
  if (file === undefined || rest.length > 0) throw new Error(usage);
  const keys = await loadSigningKeys(file);
  switch (command) {
    case "--public":
      return JSON.stringify(publicJwks(keys), null, 2);
    case "--rotate":
      return JSON.stringify({ keys: [await generateSigningKey(), ...keys.keys.map((k) => k.jwk)] }, null, 2);
    case "--prune":
      return JSON.stringify({ keys: keys.keys.slice(0, 1).map((k) => k.jwk) }, null, 2);
    default:
      throw new Error(usage);
  }
}

try {
  process.stdout.write(`${await run(process.argv.slice(2))}\n`);
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exitCode = 2;
}
