/** The API server's audit log entries (cluster/controlPlane.ts writes one JSON line per request, Metadata level). */
export interface AuditEvent {
  auditID: string;
  verb: string;
  user: { username: string };
  userAgent?: string;
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    subresource?: string;
    apiGroup?: string;
  };
  requestURI: string;
  stageTimestamp: string;
}

/** The verbs that change something. */
export const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);
