/**
 * Wires the proxy for a process: informers for Userlands and Templates (the routing index is fed
 * by their events) and for exams' NetworkPolicies (an exam's environment is served only while its
 * policy is seen), session verification with the auth service's public keys (fetched from it, or
 * from a file), the resolver chosen by the configuration, activity publishing and the HTTP servers.
 * main.ts runs it; tests run it in-process.
 */
import type { V1NetworkPolicy } from "@kubernetes/client-node";
import {
  ExamMarks,
  GROUP,
  type Template,
  TEMPLATES,
  type Userland,
  userlandsPath,
  USERLANDS,
  VERSION,
} from "../../api/v1alpha1/index.ts";
import { watchSessionRecords } from "../../lib/sessionRecords.ts";
import { Informer } from "../../lib/informer.ts";
import { oldest, ServedNamespaces } from "../../lib/namespaces.ts";
import type { KubeConnection } from "../../lib/kubeConnection.ts";
import { isNotFound, KubeRest } from "../../lib/kubeRest.ts";
import { LRUCache } from "lru-cache";
import type { Logger } from "../../lib/logger.ts";
import { sessionVerifierFor } from "../../lib/session.ts";
import { ActivityRecorder } from "./forward/activity.ts";
import type { ProxyConfig } from "./config.ts";
import { createMetrics, type ProxyMetrics } from "./metrics.ts";
import {
  clusterDnsResolver,
  fileOverrideResolver,
  overrideResolver,
  type UpstreamResolver,
} from "./route/resolver.ts";
import { UserlandIndex, type ClusterView } from "./route/userlandIndex.ts";
import { examKey } from "./route/exam.ts";
import { createProxyServer } from "./server.ts";
import type { RunningProxy } from "./serverTypes.ts";
import { requestSessions } from "../../lib/requestSessions.ts";
import { userManagerClient } from "../../lib/userManagerClient.ts";

const NAME_INDEX = "name";
/** The exams' NetworkPolicies by examKey. */
const EXAM_INDEX = "byExam";

export interface ProxyAppOptions {
  kc: KubeConnection;
  log: Logger;
  /** The proxy's own namespace (config.namespace, or the caller's own). */
  namespace: string;
  /** The namespaces served; default: config.watchNamespaces, resolved against `namespace`. */
  namespaces?: ServedNamespaces;
  metrics?: ProxyMetrics;
  /** Replaces the resolver the configuration describes (tests). */
  resolver?: UpstreamResolver;
}

export interface ProxyApp {
  proxy: RunningProxy;
  activity: ActivityRecorder;
  cluster: ClusterView;
  metrics: ProxyMetrics;
  resolver: UpstreamResolver;
  /** Resolves once both caches hold their first list. */
  synced: Promise<void>;
  /** Graceful stop: drain requests, flush activity, stop watches. */
  close(graceMs?: number): Promise<void>;
}

export function resolverFor(config: ProxyConfig, log: Logger): UpstreamResolver {
  if (config.upstreamOverridesFile) return fileOverrideResolver(config.upstreamOverridesFile, log);
  if (config.upstreamOverrides) return overrideResolver(config.upstreamOverrides);
  return clusterDnsResolver(config.clusterDomain);
}

export async function buildProxyApp(config: ProxyConfig, options: ProxyAppOptions): Promise<ProxyApp> {
  const { kc, log, namespace } = options;
  const metrics = options.metrics ?? createMetrics();
  const verifier = await sessionVerifierFor(config.sessionKeys, log);
  const resolver = options.resolver ?? resolverFor(config, log);
  const rest = new KubeRest(kc, "userland-proxy");

  const served = options.namespaces ?? new ServedNamespaces(config.watchNamespaces, namespace);
  const userlands = new Informer<Userland>(rest, {
    path: served.collections(GROUP, VERSION, USERLANDS),
    log,
  });
  const templates = new Informer<Template>(rest, {
    path: served.collections(GROUP, VERSION, TEMPLATES),
    log,
  });
  // Exams' NetworkPolicies (the operator's, labelled with their exam), by "<namespace>/<exam>".
  const examPolicies = new Informer<V1NetworkPolicy>(rest, {
    path: served.collections("networking.k8s.io", "v1", "networkpolicies"),
    labelSelector: ExamMarks.examLabel,
    log,
  });
  const policyExam = (p: V1NetworkPolicy) =>
    examKey(p.metadata?.namespace ?? "", p.metadata?.labels?.[ExamMarks.examLabel] ?? "");
  examPolicies.addIndex(EXAM_INDEX, (p) => [policyExam(p)]);
  // Ended sessions (api/sessions.ts): the user-manager's records in the proxy's own namespace.
  const sessionRecords = watchSessionRecords(rest, namespace, log);
  // The home page lists a student's Userlands of every Template.
  const USER_INDEX = "user";
  userlands.addIndex(USER_INDEX, (u) => [u.spec.user]);
  // A host names a Template, not a namespace: of one name in several namespaces the oldest is
  // served, and only Userlands in its namespace (docs/decisions/0010-namespaces.md).
  templates.addIndex(NAME_INDEX, (t) => [t.metadata.name ?? ""]);
  userlands.addIndex(NAME_INDEX, (u) => [u.metadata.name ?? ""]);
  const servedTemplate = (name: string): Template | undefined => oldest(templates.byIndex(NAME_INDEX, name));
  const inServedNamespace = (u: Userland): boolean =>
    served.single !== undefined ||
    u.metadata.namespace === servedTemplate(u.spec.templateName)?.metadata.namespace;
  // A Userland the cache lacks, asked of the API server at most once per name every 2 s (a page
  // that checks again by itself, many tabs of one student): bounded by the students who have none.
  const asked = new LRUCache<string, Promise<Userland | undefined>>({ max: 10_000, ttl: 2_000 });
  const fetchUncached = (ns: string, name: string): Promise<Userland | undefined> => {
    const cached = userlands.get(name, ns);
    if (cached) return Promise.resolve(cached);
    const key = `${ns}/${name}`;
    let answer = asked.get(key);
    if (!answer) {
      answer = rest.get<Userland>(userlandsPath(ns, name)).catch((error: unknown) => {
        if (!isNotFound(error))
          log.warn({ err: (error as Error).message, userland: key }, "could not ask for a Userland");
        return undefined;
      });
      asked.set(key, answer);
    }
    return answer;
  };
  const index = new UserlandIndex();
  const indexChanged = () => metrics.userlands.set(index.size);
  userlands.on("add", (u) => (index.upsert(u), indexChanged()));
  userlands.on("update", (u) => (index.upsert(u), indexChanged()));
  userlands.on("delete", (u) => (index.remove(u), indexChanged()));

  const cluster: ClusterView = {
    namespace,
    findUserland: (user, template) =>
      served.single !== undefined
        ? index.find(user, template)
        : index.find(user, template, servedTemplate(template)?.metadata.namespace ?? ""),
    getTemplate: (name) =>
      served.single !== undefined ? templates.get(name, served.single) : servedTemplate(name),
    synced: () =>
      userlands.hasSynced && templates.hasSynced && examPolicies.hasSynced && sessionRecords.synced(),
    getUserland: (name) =>
      served.single !== undefined
        ? userlands.get(name, served.single)
        : oldest(userlands.byIndex(NAME_INDEX, name).filter(inServedNamespace)),
    templateNames: () => [...new Set(templates.list().map((t) => t.metadata.name ?? ""))],
    userlandsOf: (user) => userlands.byIndex(USER_INDEX, user).filter(inServedNamespace),
    sessionEnded: (session) => sessionRecords.ended(session),
    examIsolated: (ns, exam) =>
      examPolicies
        .byIndex(EXAM_INDEX, examKey(ns, exam))
        .some((p) => !p.metadata?.deletionTimestamp && p.spec?.policyTypes?.includes("Egress") === true),
    templates: () =>
      served.single !== undefined
        ? templates.list(served.single)
        : templates
            .list()
            .filter(
              (t) => servedTemplate(t.metadata.name ?? "")?.metadata.namespace === t.metadata.namespace,
            ),
    fetchUserland: (ns, name) => fetchUncached(ns, name),
  };
  const activity = new ActivityRecorder({
    rest,
    log,
    metrics,
    flushMs: config.activityFlushMs,
    cached: (ns, name) => userlands.get(name, ns),
  });
  const proxy = createProxyServer({
    config,
    cluster,
    sessions: requestSessions(verifier),
    resolver,
    activity,
    metrics,
    log,
    userManager: config.userManager ? userManagerClient(config.userManager) : undefined,
  });
  // A mark written in a session record (api/sessions.ts) ends its user's open WebSockets too (the
  // informer starts below, so no event is missed).
  sessionRecords.onWritten((user) => {
    const closed = proxy.closeEndedWebSockets(user);
    if (closed > 0) log.info({ user, closed }, "closed WebSockets of ended sessions");
  });

  // An exam's policy gone: its environments' WebSockets go too (requests are refused by the router).
  examPolicies.on("delete", (p) => {
    const closed = proxy.closeExamWebSockets(policyExam(p));
    if (closed > 0)
      log.warn({ exam: policyExam(p), closed }, "exam's NetworkPolicy gone: closed its WebSockets");
  });

  const synced = Promise.all([
    userlands.start(),
    templates.start(),
    examPolicies.start(),
    sessionRecords.start(),
  ]).then(() => {
    log.info({ namespaces: served.toString(), userlands: index.size }, "caches synced");
  });
  activity.start();

  return {
    proxy,
    activity,
    cluster,
    metrics,
    resolver,
    synced,
    async close(graceMs) {
      await proxy.close(graceMs);
      await activity.stop();
      await Promise.all([userlands.stop(), templates.stop(), examPolicies.stop(), sessionRecords.stop()]);
      resolver.close();
      await rest.close();
    },
  };
}
