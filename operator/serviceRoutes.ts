/**
 * Whether a Service routes to a ready pod on the port the proxy uses: what "Ready" promises the
 * proxy. A Deployment is available as soon as its pod is ready, but the Service forwards only once
 * the EndpointSlice controller has written that pod into a slice as a ready endpoint for the port;
 * until then a connection through the Service is refused. Pure: from the cached slices alone.
 */
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";

export function serviceRoutes(service: V1Service, port: number, slices: readonly V1EndpointSlice[]): boolean {
  const servicePort = service.spec?.ports?.find((p) => p.port === port);
  if (!servicePort) return false;
  // Slices name their ports after the Service's (an unnamed Service port is "" or absent there).
  const portName = servicePort.name ?? "";
  const protocol = servicePort.protocol ?? "TCP";
  return slices.some(
    (slice) =>
      (slice.ports ?? []).some(
        (p) => (p.name ?? "") === portName && (p.protocol ?? "TCP") === protocol && p.port !== undefined,
      ) &&
      // A missing ready condition means ready (discovery.k8s.io/v1 EndpointConditions).
      (slice.endpoints ?? []).some((e) => e.addresses.length > 0 && e.conditions?.ready !== false),
  );
}
