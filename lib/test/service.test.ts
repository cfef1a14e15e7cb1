/** The one entry helper: every component's --help and -h list all its settings, LOG_LEVEL included. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { operatorSettings } from "../../operator/config.ts";
import { settings as authSettings } from "../../services/auth/config.ts";
import { settings as proxySettings } from "../../services/proxy/settings.ts";
import { settings as userManagerSettings } from "../../services/user-manager/config.ts";
import type { Settings } from "../config.ts";

const root = join(import.meta.dirname, "..", "..");
const components: [string, Settings, boolean][] = [
  ["operator/main.ts", operatorSettings, true],
  // The auth service watches session records for ended sessions (AUTH_ENDED_SESSIONS), so it uses Kubernetes.
  ["services/auth/main.ts", authSettings, true],
  ["services/proxy/main.ts", proxySettings, true],
  ["services/user-manager/main.ts", userManagerSettings, true],
];

for (const [main, settings, kubernetes] of components) {
  test(`${main} --help and -h list every setting`, () => {
    for (const flag of ["--help", "-h"]) {
      const r = spawnSync(process.execPath, [join(root, main), flag], {
        encoding: "utf8",
        env: { PATH: process.env.PATH },
        timeout: 20_000,
      });
      assert.equal(r.status, 0, r.stderr);
      for (const s of Object.values(settings)) assert.match(r.stdout, new RegExp(`^  ${s.env} `, "m"), s.env);
      assert.match(r.stdout, /^ {2}LOG_LEVEL /m);
      assert.match(r.stdout, /^ {2}LISTEN_FDS, LISTEN_FDNAMES /m);
      assert.equal(/^ {2}KUBECONFIG /m.test(r.stdout), kubernetes, "KUBECONFIG");
    }
  });
}
