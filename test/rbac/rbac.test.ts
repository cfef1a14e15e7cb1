/**
 * The chart's RBAC and the proxy's ValidatingAdmissionPolicy, proven with real requests: the chart
 * is rendered with helm and applied to the real control plane, every identity gets a real
 * ServiceAccount token (TokenRequest API), and each row of the table performs the request itself
 * (create, get, patch, delete: not an access review) and states what must happen.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { childNames } from "../../api/naming.ts";
import type { Template, Userland } from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { SESSION_RECORD_LABEL, newSessionRecord, sessionRecordName } from "../../api/sessions.ts";
import { sessionRecordsPath as configMapsPath } from "../../lib/sessionRecords.ts";
import { KubeError, KubeRest } from "../../lib/kubeRest.ts";
import { missingPermissions } from "../../services/user-manager/permissions.ts";
import { kubeconfigYaml } from "../../cluster/controlPlane.ts";
import { eventually, serviceAccountToken, testCluster, testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import {
  adminRest,
  auditLogCaughtUp,
  createTemplate,
  createUserland,
  deploymentsPath,
  getDeployment,
  getUserland,
  pvcsPath,
  servicesPath,
  simpleTemplateSpec,
  templatesPath,
  userlandsPath,
  waitForPhase,
} from "../support/resources.ts";
import { installChart, type KubeObject } from "../chart/support.ts";
import { spawnOperator, waitForLeadership } from "../../cluster/harness/operator.ts";

const RELEASE = "ul";
const PREFIX = "ul-userland"; // the chart's fullname for this release
const LEASE = "userland-operator"; // values: operator.leaseName
const ACTIVITY = "userland.dev/last-activity";

const COMPONENTS = ["operator", "user-manager", "proxy", "auth"] as const;
type Who =
  | (typeof COMPONENTS)[number]
  | "template-admin"
  | "teacher"
  | "class-teacher"
  | "course-teacher"
  | "environment-visitor";

interface Ctx {
  ns: string;
  as: Record<Who, KubeRest>;
}

/**
 * What must happen: the request succeeds, RBAC refuses it, an admission policy (the proxy's unless
 * named) refuses it, or the CRD's own validation (a CEL rule) refuses it.
 */
type Outcome =
  "allowed" | "rbac-forbidden" | { policy: RegExp; status?: number; name?: string } | { invalid: RegExp };

interface Row {
  who: Who;
  does: string;
  expect: Outcome;
  request: (c: Ctx) => Promise<unknown>;
}

const secretsPath = (ns: string, name?: string) => paths.namespaced("", "v1", "secrets", ns, name);
const podsPath = (ns: string) => paths.namespaced("", "v1", "pods", ns);
const leasesPath = (ns: string, name?: string) =>
  paths.namespaced("coordination.k8s.io", "v1", "leases", ns, name);
const eventsPath = (ns: string) => paths.namespaced("", "v1", "events", ns);
const endpointSlicesPath = (ns: string) => paths.namespaced("discovery.k8s.io", "v1", "endpointslices", ns);
const lsarPath = (ns: string) =>
  paths.namespaced("authorization.k8s.io", "v1", "localsubjectaccessreviews", ns);

const templateBody = (name: string) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Template",
  metadata: { name },
  spec: simpleTemplateSpec("registry.invalid/ide:2"),
});
const userlandBody = (name: string, user = name) => ({
  apiVersion: "userland.dev/v1alpha1",
  kind: "Userland",
  metadata: { name },
  spec: { user, templateName: "code" },
});
const deploymentBody = (name: string) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, labels: { "app.kubernetes.io/managed-by": "userland-operator" } },
  spec: {
    replicas: 0,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: "ide", image: "registry.invalid/ide:1" }] },
    },
  },
});
const lsar = (ns: string) => ({
  apiVersion: "authorization.k8s.io/v1",
  kind: "LocalSubjectAccessReview",
  spec: {
    user: "someone",
    resourceAttributes: { namespace: ns, verb: "create", group: "userland.dev", resource: "userlands" },
  },
});
const courseworkPath = (ns: string, name: string) => templatesPath(ns, name) + "/coursework";
/** The request got past authorization: the API server has no such path and says 404. */
async function expectPastRbac(request: Promise<unknown>): Promise<void> {
  await assert.rejects(request, (error: Error) => {
    assert.ok(error instanceof KubeError, String(error));
    assert.equal(error.code, 404, error.message);
    return true;
  });
}
const activityNow = () => ({ metadata: { annotations: { [ACTIVITY]: new Date().toISOString() } } });

const POLICY_SPEC = /may change only the userland\.dev\/last-activity annotation.*spec must not change/;
const START_STOP = "userland-start-stop-only";
const TEMPLATE_IMMUTABLE = /spec\.templateName is immutable/;

const rows: Row[] = [
  // --- user-manager: Userlands, and nothing that decides what runs --------------------------------
  {
    who: "user-manager",
    does: "cannot create a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as["user-manager"].create(templatesPath(c.ns), templateBody("um-template")),
  },
  {
    who: "user-manager",
    does: "cannot change a Template's image",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as["user-manager"].patch(templatesPath(c.ns, "code"), {
        spec: { template: { spec: { containers: [{ name: "ide", image: "evil.example/miner:1" }] } } },
      }),
  },
  {
    who: "user-manager",
    does: "cannot delete a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as["user-manager"].delete(templatesPath(c.ns, "code")),
  },
  {
    who: "user-manager",
    does: "cannot read a Secret",
    expect: "rbac-forbidden",
    request: (c) => c.as["user-manager"].get(secretsPath(c.ns, "db-password")),
  },
  {
    who: "user-manager",
    does: "cannot list Secrets",
    expect: "rbac-forbidden",
    request: (c) => c.as["user-manager"].list(secretsPath(c.ns)),
  },
  {
    who: "user-manager",
    does: "cannot create a Deployment",
    expect: "rbac-forbidden",
    request: (c) => c.as["user-manager"].create(deploymentsPath(c.ns), deploymentBody("um-deployment")),
  },
  {
    who: "user-manager",
    does: "cannot list Pods",
    expect: "rbac-forbidden",
    request: (c) => c.as["user-manager"].list(podsPath(c.ns)),
  },
  {
    who: "user-manager",
    does: "cannot write a Userland's status",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as["user-manager"].patch(userlandsPath(c.ns, "alice") + "/status", { status: { phase: "Ready" } }),
  },
  {
    who: "user-manager",
    does: "can create a Userland",
    expect: "allowed",
    request: (c) => c.as["user-manager"].create(userlandsPath(c.ns), userlandBody("um-created", "Carol")),
  },
  {
    who: "user-manager",
    does: "can list Userlands",
    expect: "allowed",
    request: (c) => c.as["user-manager"].list(userlandsPath(c.ns)),
  },
  {
    who: "user-manager",
    does: "can stop a Userland (patch spec.enabled)",
    expect: "allowed",
    request: (c) =>
      c.as["user-manager"].patch(userlandsPath(c.ns, "um-created"), { spec: { enabled: false } }),
  },
  {
    who: "user-manager",
    does: "can delete a Userland",
    expect: "allowed",
    request: (c) => c.as["user-manager"].delete(userlandsPath(c.ns, "um-created")),
  },
  {
    who: "user-manager",
    does: "can read a Template (to answer 404 for an unknown one)",
    expect: "allowed",
    request: (c) => c.as["user-manager"].get(templatesPath(c.ns, "code")),
  },
  {
    who: "user-manager",
    does: "can review a caller's token (TokenReview)",
    expect: "allowed",
    request: (c) =>
      c.as["user-manager"].create("/apis/authentication.k8s.io/v1/tokenreviews", {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token: "not-a-real-token" },
      }),
  },
  {
    who: "user-manager",
    does: "can ask RBAC about a caller in its namespace (LocalSubjectAccessReview)",
    expect: "allowed",
    request: (c) => c.as["user-manager"].create(lsarPath(c.ns), lsar(c.ns)),
  },
  {
    who: "user-manager",
    does: "cannot probe anyone's rights in another namespace",
    expect: "rbac-forbidden",
    request: (c) => c.as["user-manager"].create(lsarPath("default"), lsar("default")),
  },
  {
    who: "user-manager",
    does: "has every right the service checks at start-up (services/user-manager/permissions.ts)",
    expect: "allowed",
    request: async (c) => {
      const missing = await missingPermissions(c.as["user-manager"], c.ns);
      assert.deepEqual(missing, [], "missing permissions");
    },
  },

  // --- template admins: Templates, not students ------------------------------------------------------
  {
    who: "template-admin",
    does: "cannot create a Userland",
    expect: "rbac-forbidden",
    request: (c) => c.as["template-admin"].create(userlandsPath(c.ns), userlandBody("ta-userland")),
  },
  {
    who: "template-admin",
    does: "cannot delete a Userland",
    expect: "rbac-forbidden",
    request: (c) => c.as["template-admin"].delete(userlandsPath(c.ns, "alice")),
  },
  {
    who: "template-admin",
    does: "can list Userlands",
    expect: "allowed",
    request: (c) => c.as["template-admin"].list(userlandsPath(c.ns)),
  },
  {
    who: "template-admin",
    does: "can create a Template",
    expect: "allowed",
    request: (c) => c.as["template-admin"].create(templatesPath(c.ns), templateBody("jupyter")),
  },
  {
    who: "template-admin",
    does: "can change a Template's image",
    expect: "allowed",
    request: (c) =>
      c.as["template-admin"].patch(templatesPath(c.ns, "jupyter"), {
        spec: { template: { spec: { containers: [{ name: "ide", image: "registry.invalid/ide:3" }] } } },
      }),
  },
  {
    who: "template-admin",
    does: "can delete a Template",
    expect: "allowed",
    request: (c) => c.as["template-admin"].delete(templatesPath(c.ns, "jupyter")),
  },
  {
    who: "template-admin",
    does: "cannot read a Secret",
    expect: "rbac-forbidden",
    request: (c) => c.as["template-admin"].get(secretsPath(c.ns, "db-password")),
  },

  // --- teachers: students, not Templates ------------------------------------------------------------
  {
    who: "teacher",
    does: "can create a Userland",
    expect: "allowed",
    request: (c) => c.as.teacher.create(userlandsPath(c.ns), userlandBody("teacher-created", "Dave")),
  },
  {
    who: "teacher",
    does: "can stop a student's environment (the policy binds only the proxy)",
    expect: "allowed",
    request: (c) => c.as.teacher.patch(userlandsPath(c.ns, "teacher-created"), { spec: { enabled: false } }),
  },
  {
    who: "teacher",
    does: "cannot move a student's Userland to another Template (spec.templateName is immutable)",
    expect: { invalid: TEMPLATE_IMMUTABLE },
    request: (c) => c.as.teacher.patch(userlandsPath(c.ns, "alice"), { spec: { templateName: "exam" } }),
  },
  {
    who: "teacher",
    does: "cannot grant a student's visit consent (annotations: start and stop only)",
    expect: { policy: /labels and annotations need update on userlands\/metadata/, name: START_STOP },
    request: (c) =>
      c.as.teacher.patch(userlandsPath(c.ns, "alice"), {
        metadata: { annotations: { "userland.dev/visit-consent": "2099-01-01T00:00:00Z" } },
      }),
  },
  {
    who: "teacher",
    does: "can read Templates",
    expect: "allowed",
    request: (c) => c.as.teacher.list(templatesPath(c.ns)),
  },
  {
    who: "teacher",
    does: "cannot create a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as.teacher.create(templatesPath(c.ns), templateBody("teacher-template")),
  },
  {
    who: "teacher",
    does: "cannot change a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as.teacher.patch(templatesPath(c.ns, "code"), { spec: { idleTimeout: "5m" } }),
  },

  // --- a class's teacher (decision 0009's B: get, patch, delete on their class's Userland names) -----
  {
    who: "class-teacher",
    does: "can stop a student of the class",
    expect: "allowed",
    request: (c) => c.as["class-teacher"].patch(userlandsPath(c.ns, "alice"), { spec: { enabled: false } }),
  },
  {
    who: "class-teacher",
    does: "can start a student of the class",
    expect: "allowed",
    request: (c) => c.as["class-teacher"].patch(userlandsPath(c.ns, "alice"), { spec: { enabled: true } }),
  },
  {
    who: "class-teacher",
    does: "cannot move a student of the class into an admin-only Template",
    expect: { invalid: TEMPLATE_IMMUTABLE },
    request: (c) =>
      c.as["class-teacher"].patch(userlandsPath(c.ns, "alice"), { spec: { templateName: "exam" } }),
  },
  {
    who: "class-teacher",
    does: "cannot replace the whole object (no update verb)",
    expect: "rbac-forbidden",
    request: async (c) => {
      const alice = await c.as["class-teacher"].get<Userland>(userlandsPath(c.ns, "alice"));
      return c.as["class-teacher"].replace(userlandsPath(c.ns, "alice"), {
        ...alice,
        spec: { ...alice.spec, templateName: "exam" },
      });
    },
  },
  {
    who: "class-teacher",
    does: "cannot relabel a student of the class",
    expect: { policy: /labels and annotations need update on userlands\/metadata/, name: START_STOP },
    request: (c) =>
      c.as["class-teacher"].patch(userlandsPath(c.ns, "alice"), {
        metadata: { labels: { "userland.dev/class": "other" } },
      }),
  },
  {
    who: "class-teacher",
    does: "cannot reset a student's idle clock",
    expect: { policy: /labels and annotations need update on userlands\/metadata/, name: START_STOP },
    request: (c) => c.as["class-teacher"].patch(userlandsPath(c.ns, "alice"), activityNow()),
  },
  // Session records (api/sessions.ts, issue 41 item 4): only the user-manager writes them; no
  // teacher may remove, back-date or move a mark, and deleting a Userland leaves the record.
  {
    who: "class-teacher",
    does: "cannot write a student's session record: not a mark in 2099 (a lock-out), nor back-dated",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as["class-teacher"].patch(configMapsPath(c.ns, sessionRecordName("alice")), {
        metadata: { annotations: { "userland.dev/sessions-valid-after": "2099-01-01T00:00:00Z" } },
      }),
  },
  {
    who: "teacher",
    does: "cannot delete a student's session record (undo a revocation)",
    expect: "rbac-forbidden",
    request: (c) => c.as.teacher.delete(configMapsPath(c.ns, sessionRecordName("alice"))),
  },
  {
    who: "teacher",
    does: "cannot create a session record",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as.teacher.create(
        configMapsPath(c.ns),
        newSessionRecord("bob", { "userland.dev/sessions-valid-after": "2099-01-01T00:00:00Z" }),
      ),
  },
  {
    who: "user-manager",
    does: "writes session records (create, patch)",
    expect: "allowed",
    request: async (c) => {
      await c.as["user-manager"].create(configMapsPath(c.ns), newSessionRecord("carol", {}));
      return c.as["user-manager"].patch(configMapsPath(c.ns, sessionRecordName("carol")), {
        metadata: { annotations: { "userland.dev/ended-sessions": "s1:1999999999" } },
      });
    },
  },

  {
    who: "class-teacher",
    does: "cannot add a finalizer",
    expect: { policy: /finalizers and owner references need update/, name: START_STOP },
    request: (c) =>
      c.as["class-teacher"].patch(userlandsPath(c.ns, "alice"), {
        metadata: { finalizers: ["example.org/hold"] },
      }),
  },
  {
    who: "class-teacher",
    does: "cannot stop a student of another class",
    expect: "rbac-forbidden",
    request: (c) => c.as["class-teacher"].patch(userlandsPath(c.ns, "bob"), { spec: { enabled: false } }),
  },
  // --- course teachers: their Templates' course folders, nothing else --------------------------------
  // templates/coursework has no handler: RBAC runs first, so an allowed request ends in 404 and a
  // refused one in RBAC's 403. That is the question the operator asks (operator/teachers.ts).
  {
    who: "course-teacher",
    does: "passes RBAC for update on templates/coursework (404 from the API, not 403)",
    expect: "allowed",
    request: (c) => expectPastRbac(c.as["course-teacher"].replace(courseworkPath(c.ns, "code"), {})),
  },
  {
    who: "teacher",
    does: "is no course teacher: update on templates/coursework",
    expect: "rbac-forbidden",
    request: (c) => c.as.teacher.replace(courseworkPath(c.ns, "code"), {}),
  },
  {
    who: "template-admin",
    does: "is no course teacher: update on templates/coursework",
    expect: "rbac-forbidden",
    request: (c) => c.as["template-admin"].replace(courseworkPath(c.ns, "code"), {}),
  },
  {
    who: "course-teacher",
    does: "cannot change a Template",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as["course-teacher"].patch(templatesPath(c.ns, "code"), { spec: { idleTimeout: "5m" } }),
  },
  {
    who: "course-teacher",
    does: "cannot read Userlands",
    expect: "rbac-forbidden",
    request: (c) => c.as["course-teacher"].list(userlandsPath(c.ns)),
  },
  {
    who: "course-teacher",
    does: "cannot read a course folder's claim",
    expect: "rbac-forbidden",
    request: (c) => c.as["course-teacher"].list(pvcsPath(c.ns)),
  },
  // --- environment visitors: open students' environments, nothing else (0012-visits.md) ------------
  // userlands/visit has no handler either: allowed means 404 past RBAC. The user-manager asks RBAC
  // this question for the visitor's session user; here the visitor is a ServiceAccount.
  {
    who: "environment-visitor",
    does: "passes RBAC for create on userlands/visit (404 from the API, not 403)",
    expect: "allowed",
    request: (c) =>
      expectPastRbac(c.as["environment-visitor"].create(userlandsPath(c.ns, "alice") + "/visit", {})),
  },
  {
    who: "teacher",
    does: "is no environment visitor: create on userlands/visit",
    expect: "rbac-forbidden",
    request: (c) => c.as.teacher.create(userlandsPath(c.ns, "alice") + "/visit", {}),
  },
  {
    who: "environment-visitor",
    does: "cannot read Userlands",
    expect: "rbac-forbidden",
    request: (c) => c.as["environment-visitor"].list(userlandsPath(c.ns)),
  },
  {
    who: "environment-visitor",
    does: "cannot change a Userland",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as["environment-visitor"].patch(userlandsPath(c.ns, "alice"), { spec: { enabled: false } }),
  },
  {
    who: "user-manager",
    does: "can record an Event (a teacher's visit)",
    expect: "allowed",
    request: (c) =>
      c.as["user-manager"].create(`/api/v1/namespaces/${c.ns}/events`, {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: "alice.visit-test" },
        involvedObject: {
          apiVersion: "userland.dev/v1alpha1",
          kind: "Userland",
          name: "alice",
          namespace: c.ns,
        },
        type: "Normal",
        reason: "VisitStarted",
        message: "rbac test",
      }),
  },
  {
    who: "operator",
    does: "can ask RBAC whether a person teaches a Template (LocalSubjectAccessReview)",
    expect: "allowed",
    request: async (c) => {
      const review = await c.as.operator.create<{ status?: { allowed?: boolean } }>(lsarPath(c.ns), {
        apiVersion: "authorization.k8s.io/v1",
        kind: "LocalSubjectAccessReview",
        spec: {
          user: `system:serviceaccount:${c.ns}:course-teacher`,
          resourceAttributes: {
            namespace: c.ns,
            verb: "update",
            group: "userland.dev",
            resource: "templates",
            subresource: "coursework",
            name: "code",
          },
        },
      });
      assert.equal(review.status?.allowed, true, "the bound course teacher is allowed");
    },
  },
  {
    who: "operator",
    does: "cannot ask RBAC about another namespace",
    expect: "rbac-forbidden",
    request: (c) => c.as.operator.create(lsarPath("default"), lsar("default")),
  },

  // --- operator: its children, Userland and Template status, never a Template's spec ---------------
  {
    who: "operator",
    does: "cannot change a Template's spec (patch)",
    expect: "rbac-forbidden",
    request: (c) => c.as.operator.patch(templatesPath(c.ns, "code"), { spec: { idleTimeout: "5m" } }),
  },
  {
    who: "operator",
    does: "cannot replace a Template (update)",
    expect: "rbac-forbidden",
    request: async (c) => {
      const current = await (await adminRest()).get<Template>(templatesPath(c.ns, "code"));
      return c.as.operator.replace(templatesPath(c.ns, "code"), {
        ...current,
        spec: { ...current.spec, displayName: "Changed by the operator" },
      });
    },
  },
  {
    who: "operator",
    does: "cannot create a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as.operator.create(templatesPath(c.ns), templateBody("op-template")),
  },
  {
    who: "operator",
    does: "cannot delete a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as.operator.delete(templatesPath(c.ns, "code")),
  },
  {
    who: "operator",
    does: "can watch Templates (list)",
    expect: "allowed",
    request: (c) => c.as.operator.list(templatesPath(c.ns)),
  },
  {
    who: "operator",
    does: "can write a Template's status",
    expect: "allowed",
    request: (c) =>
      c.as.operator.patch(templatesPath(c.ns, "code") + "/status", { status: { userlands: 1 } }),
  },
  {
    who: "operator",
    does: "can write a Userland's status",
    expect: "allowed",
    request: (c) =>
      c.as.operator.patch(userlandsPath(c.ns, "alice") + "/status", {
        status: { phase: "Pending", message: "written by the rbac test" },
      }),
  },
  {
    who: "operator",
    does: "can stop an idle Userland (patch spec.enabled)",
    expect: "allowed",
    request: (c) =>
      c.as.operator.patch(userlandsPath(c.ns, "alice"), {
        metadata: { annotations: { "userland.dev/stopped-reason": "IdleTimeout" } },
        spec: { enabled: false },
      }),
  },
  {
    who: "operator",
    does: "cannot create a Userland",
    expect: "rbac-forbidden",
    request: (c) => c.as.operator.create(userlandsPath(c.ns), userlandBody("op-userland")),
  },
  {
    // Only to end a term: the Userlands a ClassArchive's read-back verified and a teacher confirmed
    // (docs/decisions/0011-coursework.md); their claims it could always delete. A dry run: RBAC decides
    // it as a real one.
    who: "operator",
    does: "can delete a Userland (the end of a term)",
    expect: "allowed",
    request: (c) => c.as.operator.delete(userlandsPath(c.ns, "alice"), undefined, { dryRun: "All" }),
  },
  {
    who: "operator",
    does: "can create a Deployment",
    expect: "allowed",
    request: (c) => c.as.operator.create(deploymentsPath(c.ns), deploymentBody("op-deployment")),
  },
  {
    who: "operator",
    does: "can delete a Deployment",
    expect: "allowed",
    request: (c) => c.as.operator.delete(deploymentsPath(c.ns, "op-deployment")),
  },
  {
    who: "operator",
    does: "can create a Service",
    expect: "allowed",
    request: (c) =>
      c.as.operator.create(servicesPath(c.ns), {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "op-service" },
        spec: { selector: { app: "x" }, ports: [{ port: 80 }] },
      }),
  },
  {
    who: "operator",
    does: "can create a PersistentVolumeClaim",
    expect: "allowed",
    request: (c) =>
      c.as.operator.create(pvcsPath(c.ns), {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: "op-pvc" },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      }),
  },
  {
    who: "operator",
    does: "can validate a pod template with a server-side dry run",
    expect: "allowed",
    request: (c) =>
      c.as.operator.create(deploymentsPath(c.ns), deploymentBody("op-dry-run"), { dryRun: "All" }),
  },
  {
    who: "operator",
    does: "can record an Event",
    expect: "allowed",
    request: (c) =>
      c.as.operator.create(eventsPath(c.ns), {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: "alice.rbac-test" },
        involvedObject: {
          apiVersion: "userland.dev/v1alpha1",
          kind: "Userland",
          name: "alice",
          namespace: c.ns,
        },
        type: "Normal",
        reason: "Test",
        message: "recorded by the rbac test",
        source: { component: "userland-operator" },
      }),
  },
  {
    who: "operator",
    does: "can list EndpointSlices (is a Userland's Service routing?)",
    expect: "allowed",
    request: (c) => c.as.operator.list(endpointSlicesPath(c.ns)),
  },
  {
    who: "operator",
    does: "can watch EndpointSlices",
    expect: "allowed",
    // Resolves when the open watch is ended here; a refusal rejects with the 403.
    request: (c) =>
      c.as.operator.watch(endpointSlicesPath(c.ns), () => undefined, { signal: AbortSignal.timeout(300) }),
  },
  {
    who: "operator",
    does: "cannot write an EndpointSlice",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as.operator.create(endpointSlicesPath(c.ns), {
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name: "op-slice" },
        addressType: "IPv4",
        endpoints: [],
      }),
  },
  {
    who: "operator",
    does: "can list Pods (where a start is)",
    expect: "allowed",
    request: (c) => c.as.operator.list(podsPath(c.ns)),
  },
  {
    who: "operator",
    does: "can list a claim's Events (why it is not provisioned)",
    expect: "allowed",
    request: (c) =>
      c.as.operator.list(eventsPath(c.ns), {
        query: {
          fieldSelector: "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=x,type=Warning",
        },
      }),
  },
  {
    who: "operator",
    does: "can take its leader Lease",
    expect: "allowed",
    request: (c) =>
      c.as.operator.create(leasesPath(c.ns), {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: LEASE },
        spec: { holderIdentity: "rbac-test", leaseDurationSeconds: 15 },
      }),
  },
  {
    who: "operator",
    does: "can renew its leader Lease",
    expect: "allowed",
    request: async (c) => {
      const lease = await c.as.operator.get<KubeObject & { spec: Record<string, unknown> }>(
        leasesPath(c.ns, LEASE),
      );
      return c.as.operator.replace(leasesPath(c.ns, LEASE), {
        ...lease,
        spec: { ...lease.spec, renewTime: new Date().toISOString().replace(/Z$/, "000Z") },
      });
    },
  },
  {
    who: "operator",
    does: "cannot take over another component's Lease",
    expect: "rbac-forbidden",
    request: async (c) => {
      const lease = await (await adminRest()).get<KubeObject>(leasesPath(c.ns, "someone-else"));
      return c.as.operator.replace(leasesPath(c.ns, "someone-else"), {
        ...lease,
        spec: { holderIdentity: "userland-operator" },
      });
    },
  },
  {
    who: "operator",
    does: "cannot read a Secret",
    expect: "rbac-forbidden",
    request: (c) => c.as.operator.get(secretsPath(c.ns, "db-password")),
  },
  {
    who: "operator",
    does: "can create a Pod (coursework's copy pods, docs/decisions/0011-coursework.md)",
    expect: "allowed",
    request: (c) =>
      c.as.operator.create(podsPath(c.ns), {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "op-pod" },
        spec: { containers: [{ name: "x", image: "registry.invalid/x:1" }] },
      }),
  },
  {
    who: "operator",
    does: "cannot exec into a Pod (copy pods report through their termination message)",
    expect: "rbac-forbidden",
    request: (c) => c.as.operator.create(`${podsPath(c.ns)}/op-pod/exec?command=true&stdout=true`, {}),
  },

  // --- proxy: reads, and reports activity through one annotation ------------------------------------
  {
    who: "proxy",
    does: "can list Userlands",
    expect: "allowed",
    request: (c) => c.as.proxy.list(userlandsPath(c.ns)),
  },
  {
    who: "proxy",
    does: "can list Templates",
    expect: "allowed",
    request: (c) => c.as.proxy.list(templatesPath(c.ns)),
  },
  {
    who: "proxy",
    does: "can record activity (the last-activity annotation)",
    expect: "allowed",
    request: async (c) => {
      const stamp = new Date().toISOString();
      await c.as.proxy.patch(userlandsPath(c.ns, "bob"), {
        metadata: { annotations: { [ACTIVITY]: stamp } },
      });
      assert.equal((await getUserland(c.ns, "bob")).metadata.annotations?.[ACTIVITY], stamp);
    },
  },
  {
    who: "proxy",
    does: "cannot start or stop an environment (spec.enabled)",
    expect: { policy: POLICY_SPEC },
    request: (c) => c.as.proxy.patch(userlandsPath(c.ns, "bob"), { spec: { enabled: false } }),
  },
  {
    who: "proxy",
    does: "cannot switch a student's Template (spec.templateName is immutable, before its policy asks)",
    expect: { invalid: TEMPLATE_IMMUTABLE },
    request: (c) => c.as.proxy.patch(userlandsPath(c.ns, "bob"), { spec: { templateName: "other" } }),
  },
  {
    who: "proxy",
    does: "cannot slip a spec change into an activity patch",
    expect: { policy: POLICY_SPEC },
    request: (c) =>
      c.as.proxy.patch(userlandsPath(c.ns, "bob"), { ...activityNow(), spec: { enabled: false } }),
  },
  {
    who: "proxy",
    does: "cannot set another annotation",
    expect: { policy: /other annotations must not change/ },
    request: (c) =>
      c.as.proxy.patch(userlandsPath(c.ns, "bob"), {
        metadata: { annotations: { "userland.dev/stopped-reason": "Proxy" } },
      }),
  },
  {
    who: "proxy",
    does: "cannot remove another annotation",
    expect: { policy: /other annotations must not change/ },
    request: (c) =>
      c.as.proxy.patch(userlandsPath(c.ns, "bob"), {
        metadata: { annotations: { "example.org/note": null } },
      }),
  },
  {
    who: "proxy",
    does: "cannot change labels",
    expect: { policy: /labels must not change/ },
    request: (c) =>
      c.as.proxy.patch(userlandsPath(c.ns, "bob"), { metadata: { labels: { course: "hacked" } } }),
  },
  {
    who: "proxy",
    does: "cannot add a finalizer",
    expect: { policy: /finalizers and owner references must not change/ },
    request: (c) =>
      c.as.proxy.patch(userlandsPath(c.ns, "bob"), { metadata: { finalizers: ["example.org/keep"] } }),
  },
  {
    who: "proxy",
    does: "cannot write a last-activity that is not a time",
    expect: { policy: /must be an RFC 3339 time/, status: 422 },
    request: (c) =>
      c.as.proxy.patch(userlandsPath(c.ns, "bob"), { metadata: { annotations: { [ACTIVITY]: "forever" } } }),
  },
  {
    who: "proxy",
    does: "cannot replace a Userland (no update verb)",
    expect: "rbac-forbidden",
    request: async (c) => c.as.proxy.replace(userlandsPath(c.ns, "bob"), await getUserland(c.ns, "bob")),
  },
  {
    who: "proxy",
    does: "cannot create a Userland itself (its create right is for the user-manager's access review)",
    expect: { policy: /the proxy may not create or delete Userlands/ },
    request: (c) => c.as.proxy.create(userlandsPath(c.ns), userlandBody("proxy-created")),
  },
  {
    who: "proxy",
    does: "cannot delete a Userland",
    expect: "rbac-forbidden",
    request: (c) => c.as.proxy.delete(userlandsPath(c.ns, "bob")),
  },
  {
    who: "proxy",
    does: "cannot write a Userland's status",
    expect: "rbac-forbidden",
    request: (c) => c.as.proxy.patch(userlandsPath(c.ns, "bob") + "/status", { status: { phase: "Ready" } }),
  },
  {
    who: "proxy",
    does: "cannot change a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as.proxy.patch(templatesPath(c.ns, "code"), { spec: { idleTimeout: "1m" } }),
  },
  {
    who: "proxy",
    does: "cannot read a Secret",
    expect: "rbac-forbidden",
    request: (c) => c.as.proxy.get(secretsPath(c.ns, "db-password")),
  },

  // --- auth: list and watch session records (ended sessions), delete userlands/sessions, nothing else
  {
    who: "auth",
    does: "can list session records (ended sessions)",
    expect: "allowed",
    request: (c) => c.as.auth.list(configMapsPath(c.ns), { query: { labelSelector: SESSION_RECORD_LABEL } }),
  },
  {
    who: "auth",
    does: "can watch session records (ended sessions)",
    expect: "allowed",
    // Resolves when the open watch is ended here; a refusal rejects with the 403.
    request: (c) =>
      c.as.auth.watch(configMapsPath(c.ns), () => undefined, { signal: AbortSignal.timeout(300) }),
  },
  {
    who: "auth",
    does: "cannot write a session record (only the user-manager does)",
    expect: "rbac-forbidden",
    request: (c) => c.as.auth.create(configMapsPath(c.ns), newSessionRecord("dave", {})),
  },
  {
    who: "auth",
    does: "cannot list Userlands (it needs none for ended sessions)",
    expect: "rbac-forbidden",
    request: (c) => c.as.auth.list(userlandsPath(c.ns)),
  },
  {
    who: "auth",
    does: "cannot get a Userland by name",
    expect: "rbac-forbidden",
    request: (c) => c.as.auth.get(userlandsPath(c.ns, "alice")),
  },
  {
    who: "auth",
    does: "cannot mark a Userland (patch)",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as.auth.patch(userlandsPath(c.ns, "alice"), {
        metadata: { annotations: { "userland.dev/sessions-valid-after": "2026-01-01T00:00:00Z" } },
      }),
  },
  // Sign-out everywhere (services/auth/signOut.ts): userlands/sessions has no handler, allowed means
  // 404 past RBAC; the user-manager asks RBAC this question before it ends a relayed session.
  {
    who: "auth",
    does: "passes RBAC for delete on userlands/sessions (404 from the API, not 403)",
    expect: "allowed",
    request: (c) => expectPastRbac(c.as.auth.delete(userlandsPath(c.ns, "alice") + "/sessions")),
  },
  {
    who: "auth",
    does: "cannot start or stop a Userland (patch spec.enabled)",
    expect: "rbac-forbidden",
    request: (c) => c.as.auth.patch(userlandsPath(c.ns, "alice"), { spec: { enabled: false } }),
  },
  {
    who: "auth",
    does: "cannot delete a Userland",
    expect: "rbac-forbidden",
    request: (c) => c.as.auth.delete(userlandsPath(c.ns, "alice")),
  },
  {
    who: "teacher",
    does: "does not end sessions by token: delete on userlands/sessions",
    expect: "rbac-forbidden",
    request: (c) => c.as.teacher.delete(userlandsPath(c.ns, "alice") + "/sessions"),
  },
  {
    who: "proxy",
    does: "does not end sessions by token: delete on userlands/sessions",
    expect: "rbac-forbidden",
    request: (c) => c.as.proxy.delete(userlandsPath(c.ns, "alice") + "/sessions"),
  },
  {
    who: "auth",
    does: "cannot read a Template",
    expect: "rbac-forbidden",
    request: (c) => c.as.auth.get(templatesPath(c.ns, "code")),
  },
  {
    who: "auth",
    does: "cannot create a Userland",
    expect: "rbac-forbidden",
    request: (c) => c.as.auth.create(userlandsPath(c.ns), userlandBody("auth-created")),
  },
  {
    who: "auth",
    does: "cannot review tokens",
    expect: "rbac-forbidden",
    request: (c) =>
      c.as.auth.create("/apis/authentication.k8s.io/v1/tokenreviews", {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token: "x" },
      }),
  },
];

const serviceAccount = (who: Who) =>
  (COMPONENTS as readonly string[]).includes(who) ? `${PREFIX}-${who}` : who;

async function expectOutcome(row: Row, c: Ctx): Promise<void> {
  let error: Error | undefined;
  try {
    await row.request(c);
  } catch (e) {
    error = e instanceof Error ? e : new Error(String(e));
  }
  const user = `system:serviceaccount:${c.ns}:${serviceAccount(row.who)}`;
  if (row.expect === "allowed") {
    if (error) throw error;
    return;
  }
  assert.ok(
    error instanceof KubeError,
    `expected the API server to refuse, got ${error?.message ?? "success"}`,
  );
  if (row.expect === "rbac-forbidden") {
    assert.equal(error.code, 403, error.message);
    // RBAC's own refusal (not the admission policy, not a missing object).
    assert.match(error.message, new RegExp(`User "${user}" cannot `), error.message);
    return;
  }
  if ("invalid" in row.expect) {
    assert.equal(error.code, 422, error.message);
    assert.match(error.message, row.expect.invalid);
    return;
  }
  assert.equal(error.code, row.expect.status ?? 403, error.message);
  const policy = row.expect.name ?? "proxy-activity-only";
  assert.match(error.message, new RegExp(`ValidatingAdmissionPolicy '[^']*${policy}'`), error.message);
  assert.match(error.message, row.expect.policy);
}

/** Installs the chart into a fresh namespace and gives every identity a real token. */
async function setUp(t: TestContext, prefix: string): Promise<Ctx & { objects: KubeObject[] }> {
  const ns = await testNamespace(t, prefix);
  await installCrds();
  const objects = await installChart(t, RELEASE, ns);
  const admin = await adminRest();
  const rbac = (name: string, role: string) =>
    admin.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", ns), {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ kind: "ServiceAccount", name, namespace: ns }],
    });
  // People are bound to the chart's ClusterRoles per namespace, as NOTES.txt tells admins to.
  await rbac("template-admin", `${ns}-template-admin`);
  await rbac("teacher", `${ns}-teacher`);
  await rbac("course-teacher", `${ns}-course-teacher`);
  await rbac("environment-visitor", `${ns}-environment-visitor`);
  // A class's teacher: a Role naming their students' Userlands (docs/decisions/0009-teachers.md, B).
  await admin.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "roles", ns), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "class-teacher" },
    rules: [
      {
        apiGroups: ["userland.dev"],
        resources: ["userlands"],
        resourceNames: ["alice"],
        verbs: ["get", "patch", "delete"],
      },
    ],
  });
  await admin.create(paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", ns), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "class-teacher" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "class-teacher" },
    subjects: [{ kind: "ServiceAccount", name: "class-teacher", namespace: ns }],
  });
  const cluster = await testCluster();
  const as = {} as Record<Who, KubeRest>;
  for (const who of [
    ...COMPONENTS,
    "template-admin",
    "teacher",
    "class-teacher",
    "course-teacher",
    "environment-visitor",
  ] as const) {
    const token = await serviceAccountToken(ns, serviceAccount(who));
    as[who] = new KubeRest(cluster.kubeConfigForToken(token, ns), `rbac-test-${who}`);
  }
  t.after(async () => {
    for (const rest of Object.values(as)) await rest.close();
  });
  return { ns, as, objects };
}

test("RBAC and the proxy's admission policy, request by request", async (t) => {
  const c = await setUp(t, "rbac");
  const admin = await adminRest();
  await createTemplate(c.ns, "code", simpleTemplateSpec());
  await createUserland(c.ns, "alice", "alice", "code");
  const bob = await createUserland(c.ns, "bob", "Bob", "code");
  await admin.patch(userlandsPath(c.ns, "bob"), {
    metadata: { annotations: { "example.org/note": "keep" } },
  });
  await admin.create(secretsPath(c.ns), {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "db-password" },
    stringData: { password: "hunter2" },
  });
  await admin.create(leasesPath(c.ns), {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "someone-else" },
    spec: { holderIdentity: "another-controller" },
  });

  await t.test("the admission policy is in force, its CEL type-checked without warnings", async () => {
    const name = `${c.ns}-${PREFIX}-proxy-activity-only`;
    // The API server loads new policies asynchronously: wait until a forbidden patch is refused.
    await eventually(
      "the proxy's admission policy to refuse a label change",
      async () => {
        try {
          await c.as.proxy.patch(userlandsPath(c.ns, "bob"), { metadata: { labels: { probe: "x" } } });
          await admin.patch(userlandsPath(c.ns, "bob"), { metadata: { labels: { probe: null } } });
          return false;
        } catch (error) {
          return error instanceof KubeError && /ValidatingAdmissionPolicy/.test(error.message);
        }
      },
      30_000,
      250,
    );
    // The API server type-checks the expressions (request.* fully; a custom resource's fields are
    // dynamic to it, so the rows below are what proves the field checks).
    await assertTypeChecked(admin, name);
  });

  await t.test(
    "the start-and-stop-only policy is in force, its CEL type-checked without warnings",
    async () => {
      const name = `${c.ns}-${PREFIX}-${START_STOP}`;
      await eventually(
        "the start-and-stop-only policy to refuse a teacher's label change",
        async () => {
          try {
            await c.as.teacher.patch(userlandsPath(c.ns, "bob"), { metadata: { labels: { probe: "x" } } });
            await admin.patch(userlandsPath(c.ns, "bob"), { metadata: { labels: { probe: null } } });
            return false;
          } catch (error) {
            return error instanceof KubeError && new RegExp(START_STOP).test(error.message);
          }
        },
        30_000,
        250,
      );
      await assertTypeChecked(admin, name);
    },
  );

  for (const row of rows) {
    const expectation =
      row.expect === "allowed"
        ? "allowed"
        : row.expect === "rbac-forbidden"
          ? "403 from RBAC"
          : "invalid" in row.expect
            ? "422 from the CRD's rule"
            : "refused by the policy";
    await t.test(`${row.who} ${row.does} → ${expectation}`, () => expectOutcome(row, c));
  }

  await t.test("nothing the refused requests tried has changed Bob's Userland", async () => {
    const now = await getUserland(c.ns, "bob");
    assert.deepEqual(now.spec, bob.spec);
    assert.equal(now.metadata.labels?.course, undefined);
    assert.deepEqual(now.metadata.finalizers ?? [], []);
    assert.equal(now.metadata.annotations?.["example.org/note"], "keep");
    assert.equal(now.metadata.annotations?.["userland.dev/stopped-reason"], undefined);
    const alice = await getUserland(c.ns, "alice");
    assert.equal(alice.spec.templateName, "code", "nobody moved Alice to another Template");
    assert.equal(alice.metadata.labels?.["userland.dev/class"], undefined);
    assert.equal(alice.metadata.annotations?.["userland.dev/visit-consent"], undefined);
    assert.equal(alice.metadata.annotations?.[ACTIVITY], undefined);
    assert.deepEqual(alice.metadata.finalizers ?? [], []);
  });
});

test("the operator does its whole job under the chart's Role, without a single 403", async (t) => {
  const c = await setUp(t, "rbac-op");
  const cluster = await testCluster();
  const username = `system:serviceaccount:${c.ns}:${PREFIX}-operator`;
  const token = await serviceAccountToken(c.ns, `${PREFIX}-operator`);
  const dir = mkdtempSync(join(tmpdir(), "userland-rbac-"));
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    kubeconfigYaml(cluster.info.server, readFileSync(cluster.info.caFile), "operator", token, c.ns),
  );
  const since = new Date();
  const operator = await spawnOperator(kubeconfig, username, c.ns, { identity: "chart-operator-0" });
  t.after(async () => {
    await operator.stop("SIGKILL");
  });
  await waitForLeadership(operator);

  await createTemplate(c.ns, "code", simpleTemplateSpec());
  // A Template with a volume and a course folder, so every kind of child is made and the operator
  // asks who teaches (kwok has no storage: the claims stay Pending, so this one is not expected to
  // become Ready).
  const claimSpec = { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } };
  await createTemplate(
    c.ns,
    "data",
    simpleTemplateSpec("registry.invalid/db:1", {
      volumes: [{ name: "home", pvcSpec: claimSpec }],
      coursework: {
        home: { volume: "home", mountPath: "/home/student" },
        folders: [{ name: "course", mountPath: "/course", pvcSpec: claimSpec }],
      },
    }),
  );
  const userland = await createUserland(c.ns, "alice", "alice", "code");
  const withData = await createUserland(c.ns, "bob", "bob", "data");
  const ready = await waitForPhase(c.ns, "alice", "Ready", 60_000);
  assert.ok(ready.status?.service?.name, "status names the Service");
  const admin = await adminRest();
  await eventually("the Template's status", async () => {
    const template = await admin.get<Template>(templatesPath(c.ns, "code"));
    return template.status?.conditions?.some((x) => x.type === "PodTemplateValid" && x.status === "True");
  });
  await eventually("Bob's volume claim and the course folder's", async () => {
    const claims = await admin.list<KubeObject>(pvcsPath(c.ns));
    const names = claims.items.map((pvc) => pvc.metadata.name);
    return (
      claims.items.some((pvc) => pvc.metadata.labels?.["userland.dev/userland"] === "bob") &&
      names.includes("data-course-course")
    );
  });
  await eventually("Bob's Deployment with the course folder (read-only: he teaches nothing)", async () => {
    const deployment = await getDeployment(c.ns, childNames("data", "bob").deployment);
    return deployment?.spec?.template.spec?.volumes?.some(
      (v) => v.persistentVolumeClaim?.claimName === "data-course-course" && v.persistentVolumeClaim.readOnly,
    );
  });
  const lease = await admin.get<{ spec: { holderIdentity?: string } }>(leasesPath(c.ns, LEASE));
  assert.equal(lease.spec.holderIdentity, "chart-operator-0");
  // Stopping keeps the data; deleting the Userland removes what it owns.
  await admin.patch(userlandsPath(c.ns, "alice"), { spec: { enabled: false } });
  await waitForPhase(c.ns, "alice", "Stopped", 60_000);
  await admin.delete(userlandsPath(c.ns, userland.metadata.name ?? ""));
  await admin.delete(userlandsPath(c.ns, withData.metadata.name ?? ""));

  // The audit log holds every request the operator made: none was refused.
  await auditLogCaughtUp(cluster.info.auditLog);
  const refused = readFileSync(cluster.info.auditLog, "utf8")
    .split("\n")
    .filter((line) => line.includes(username))
    .map(
      (line) =>
        JSON.parse(line) as {
          user: { username: string };
          verb: string;
          requestURI: string;
          responseStatus?: { code?: number };
          stageTimestamp: string;
        },
    )
    .filter((e) => e.user.username === username && Date.parse(e.stageTimestamp) >= since.getTime())
    .filter((e) => e.responseStatus?.code === 403)
    .map((e) => `${e.verb} ${e.requestURI}`);
  assert.deepEqual(refused, [], `the operator was refused:\n${refused.join("\n")}`);
  assert.doesNotMatch(operator.logs(), /forbidden/i);
  const userlands = await admin.list<Userland>(userlandsPath(c.ns));
  assert.equal(userlands.items.length, 0);
});

/** Waits for the API server's type-check of a ValidatingAdmissionPolicy and asserts it warns of nothing. */
async function assertTypeChecked(admin: KubeRest, name: string): Promise<void> {
  const policy = await eventually(
    "the policy's type-check to be reported",
    async () => {
      const p = await admin.get<{ status?: { observedGeneration?: number; typeChecking?: unknown } }>(
        `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${name}`,
      );
      return p.status?.observedGeneration ? p : undefined;
    },
    30_000,
    250,
  );
  assert.deepEqual(policy.status?.typeChecking ?? {}, {}, "CEL type-check warnings");
}
