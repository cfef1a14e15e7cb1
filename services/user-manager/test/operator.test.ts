/** With the real operator running: what the list view shows once an environment is up. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { childNames } from "../../../api/naming.ts";
import { eventually } from "../../../test/support/cluster.ts";
import { startOperator } from "../../../test/support/operator.ts";
import { startUserManager } from "./support.ts";

test("a Userland created through the API becomes Ready; stop and start through the API reach the operator", async (t) => {
  const h = await startUserManager(t);
  await startOperator(t, h.ns);
  const created = await h.call("POST", "/api/v1/userlands", {
    token: h.teacher,
    body: { user: "Koba1t", templateName: "code" },
  });
  assert.equal(created.status, 201, created.text);
  const name = String(created.json.name);

  const ready = await eventually("the list to show the Userland Ready", async () => {
    const r = await h.call("GET", "/api/v1/userlands?phase=Ready&template=code", { token: h.teacher });
    const items = r.json.items as { name: string; phase: string; message: string; service: unknown }[];
    return items.find((i) => i.name === name);
  });
  assert.equal(ready.message, "The environment is ready");
  assert.deepEqual(ready.service, { name: childNames("code", name).service, port: 80 });

  assert.equal((await h.call("POST", `/api/v1/userlands/${name}/stop`, { token: h.teacher })).status, 200);
  await eventually(
    "phase Stopped",
    async () =>
      (await h.call("GET", `/api/v1/userlands/${name}`, { token: h.teacher })).json.phase === "Stopped",
  );
  assert.equal((await h.call("POST", `/api/v1/userlands/${name}/start`, { token: h.teacher })).status, 200);
  await eventually(
    "phase Ready again",
    async () =>
      (await h.call("GET", `/api/v1/userlands/${name}`, { token: h.teacher })).json.phase === "Ready",
  );
});
