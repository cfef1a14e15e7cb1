/**
 * The chart's NetworkPolicies keep students' environments out of the cluster by its pod and Service
 * ranges (values `networkPolicy.podCIDRs`, `serviceCIDRs`), which the admin must set to the
 * cluster's: ranges that are not the cluster's leave other namespaces' pods open to students'
 * environments (the platform's own are kept apart by selectors whatever the ranges say; issue 41
 * item 3). Helm cannot see the cluster's ranges, but the operator sees every environment's address:
 * it checks them against the pod ranges the chart was rendered with (OPERATOR_POLICY_POD_CIDRS) and
 * says so at the first one outside, once per term: an error in its log and a Warning Event on that
 * Userland, which `kubectl describe` shows.
 */
import { addressSet, type AddressSet } from "../lib/cidrs.ts";
import type { Logger } from "../lib/logger.ts";
import type { Userland } from "../api/v1alpha1/index.ts";
import { userlandRef, type EventRecorder } from "../lib/events.ts";

export const POD_OUTSIDE_RANGES = "PodOutsideNetworkPolicyRanges";

export class PolicyRangeCheck {
  private readonly cidrs: readonly string[];
  private readonly ranges: AddressSet;
  private readonly events: EventRecorder;
  private readonly log: Logger;
  private told = false;

  constructor(cidrs: readonly string[], events: EventRecorder, log: Logger) {
    this.cidrs = cidrs;
    this.ranges = addressSet(cidrs);
    this.events = events;
    this.log = log;
  }

  /**
   * An environment's pod has `address`: outside the ranges, the admin is told (once). Its Userland is
   * looked up only then: every pod event of every environment comes here.
   */
  observe(address: string | undefined, userlandOf: () => Userland | undefined): void {
    if (this.told || !address || this.cidrs.length === 0 || this.ranges.has(address)) return;
    const userland = userlandOf();
    if (!userland) return;
    this.told = true;
    const message = `The environment's pod has the address ${address}, outside the pod ranges the chart's NetworkPolicies were rendered with (networkPolicy.podCIDRs: ${this.cidrs.join(", ")}): set networkPolicy.podCIDRs and serviceCIDRs to this cluster's ranges, or students' environments can reach other namespaces' pods`;
    this.log.error(
      { userland: `${userland.metadata.namespace}/${userland.metadata.name}`, address },
      message,
    );
    this.events.warning(userlandRef(userland), POD_OUTSIDE_RANGES, message);
  }
}
