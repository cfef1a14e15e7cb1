/** The console's settings: off unless the session keys are given, and then complete and safe. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../../lib/config.ts";
import { consoleConfig, loadUserManagerConfig } from "../config.ts";

const full = {
  USER_MANAGER_SESSION_JWKS_URL: "http://userland-auth.ide.svc/.well-known/jwks.json",
  USER_MANAGER_LOGIN_URL: "https://auth.example.org/login",
  USER_MANAGER_CONSOLE_URL: "https://example.org/console",
};

const problems = (env: Record<string, string>): string[] => {
  try {
    loadUserManagerConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

test("off without session keys; on with all three, the URL normalised and the default prefixes", () => {
  assert.equal(consoleConfig(loadUserManagerConfig({})), undefined);
  const on = consoleConfig(loadUserManagerConfig(full));
  assert.ok(on);
  assert.equal(on.url.href, "https://example.org/console/");
  assert.equal(on.url.origin, "https://example.org");
  assert.deepEqual(on.keys, { url: new URL(full.USER_MANAGER_SESSION_JWKS_URL) });
  assert.equal(on.userPrefix, "userland:");
  assert.equal(on.groupPrefix, "userland:group:");
  assert.equal(on.classLabel, "userland.dev/class");
  const file = consoleConfig(
    loadUserManagerConfig({
      ...full,
      USER_MANAGER_SESSION_JWKS_URL: "",
      USER_MANAGER_SESSION_PUBLIC_KEYS_FILE: "/k.json",
    }),
  );
  assert.deepEqual(file?.keys, { file: "/k.json" });
});

test("half a console is refused, naming what to set, together with every other problem", () => {
  assert.deepEqual(problems({ USER_MANAGER_SESSION_JWKS_URL: full.USER_MANAGER_SESSION_JWKS_URL }).length, 2);
  assert.match(
    problems({ USER_MANAGER_SESSION_JWKS_URL: full.USER_MANAGER_SESSION_JWKS_URL }).join("\n"),
    /set USER_MANAGER_LOGIN_URL[\s\S]*set USER_MANAGER_CONSOLE_URL/,
  );
  assert.match(
    problems({ USER_MANAGER_CONSOLE_URL: full.USER_MANAGER_CONSOLE_URL }).join(),
    /needs the auth service's public session keys/,
  );
  assert.match(problems({ ...full, USER_MANAGER_SESSION_PUBLIC_KEYS_FILE: "/k" }).join(), /not both/);
  const both = problems({
    USER_MANAGER_SESSION_JWKS_URL: full.USER_MANAGER_SESSION_JWKS_URL,
    USER_MANAGER_PORT: "x",
  });
  assert.equal(both.length, 3, both.join("\n"));
});

test("prefixes can never name Kubernetes' own identities; the console lives at /console/", () => {
  // (An empty value is no value: the default prefix.)
  for (const prefix of ["system:", "system:serviceaccount:", "with space"])
    for (const name of ["USER_MANAGER_SESSION_USER_PREFIX", "USER_MANAGER_SESSION_GROUP_PREFIX"])
      assert.equal(problems({ ...full, [name]: prefix }).length, 1, `${name}=${prefix}`);
  assert.match(
    problems({ ...full, USER_MANAGER_CONSOLE_URL: "https://example.org/" }).join(),
    /must end in \/console\//,
  );
  assert.match(
    problems({ ...full, USER_MANAGER_CONSOLE_URL: "https://example.org/console/?x" }).join(),
    /query/,
  );
  assert.match(problems({ ...full, USER_MANAGER_CLASS_LABEL: "not a label" }).join(), /label key/);
  assert.equal(
    consoleConfig(loadUserManagerConfig({ ...full, USER_MANAGER_SESSION_USER_PREFIX: "uni-" }))?.userPrefix,
    "uni-",
  );
});
