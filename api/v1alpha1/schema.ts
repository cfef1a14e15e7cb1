/**
 * Schema builders for Kubernetes structural schemas. TypeBox gives each schema its TypeScript type
 * (Static<>), so one definition serves the CRD's OpenAPI schema, the operator's types and the
 * user-manager's request validation. These helpers cover what Kubernetes spells differently from
 * plain JSON Schema (maps as additionalProperties, enums with a type, int-or-string, embedded
 * Kubernetes objects kept whole).
 */
import Type, { type TSchema, type TUnsafe } from "typebox";

export { Type };
export type { Static, TSchema } from "typebox";

/** A map of strings (labels, annotations, resource quantities). */
export const StringMap = (options: Record<string, unknown> = {}): TUnsafe<Record<string, string>> =>
  Type.Unsafe<Record<string, string>>({
    type: "object",
    additionalProperties: { type: "string" },
    ...options,
  });

/** A string enum; Kubernetes needs the `type` beside `enum`. */
export const StringEnum = <const T extends string[]>(
  values: [...T],
  options: Record<string, unknown> = {},
): TUnsafe<T[number]> => Type.Unsafe<T[number]>({ type: "string", enum: values, ...options });

/** A port number or port name, as in Service targetPort. */
export const IntOrString = (options: Record<string, unknown> = {}): TUnsafe<number | string> =>
  Type.Unsafe<number | string>({ ...INT_OR_STRING, ...options });

/** The structural-schema spelling of int-or-string, for nested plain schemas. */
export const INT_OR_STRING = {
  "x-kubernetes-int-or-string": true,
  anyOf: [{ type: "integer" }, { type: "string" }],
};

/**
 * An embedded Kubernetes structure (PodSpec, PersistentVolumeClaimSpec, ...) kept as the API server
 * sends it. Its full validation is the API server's own, run as a server-side dry run by the operator;
 * `properties` lists the few fields checked here too, so obvious mistakes fail at `kubectl apply`.
 */
export const Embedded = <T>(options: Record<string, unknown> = {}): TUnsafe<T> =>
  Type.Unsafe<T>({ type: "object", "x-kubernetes-preserve-unknown-fields": true, ...options });

/** metav1.Condition, the standard condition shape. */
export const Condition = Type.Object({
  type: Type.String({
    maxLength: 316,
    pattern:
      "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
  }),
  status: StringEnum(["True", "False", "Unknown"]),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: "int64" })),
  lastTransitionTime: Type.String({ format: "date-time" }),
  reason: Type.String({ maxLength: 1024, minLength: 1, pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" }),
  message: Type.String({ maxLength: 32768 }),
});

export const Conditions = Type.Array(Condition, {
  maxItems: 16,
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
});

/**
 * Turns a schema into plain JSON: drops TypeBox's symbol keys. `default`s stay: structural schemas
 * allow them, and the API server fills them in (e.g. Userland spec.enabled: true).
 */
export function toOpenAPI(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}
