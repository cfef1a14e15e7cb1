/** metav1.Condition bookkeeping: a condition's lastTransitionTime moves only when its status does. */
import type { Static } from "typebox";
import type { Condition } from "../api/v1alpha1/index.ts";
import { kubeTime } from "../api/times.ts";

export type ConditionValue = Static<typeof Condition>;
export type ConditionInput = Omit<ConditionValue, "lastTransitionTime">;

/**
 * A metav1.Time (e.g. creationTimestamp) in milliseconds since the epoch, NaN if missing: objects
 * from the API carry a string, client-node's types say Date, so both are read.
 */
export const timeMs = (time: Date | string | undefined): number =>
  time instanceof Date ? time.getTime() : Date.parse(time ?? "");

export function setCondition(
  existing: readonly ConditionValue[] | undefined,
  next: ConditionInput,
  now: () => string = () => kubeTime(new Date()),
): ConditionValue[] {
  const conditions = (existing ?? []).map((c) => ({ ...c }));
  const index = conditions.findIndex((c) => c.type === next.type);
  const previous = index >= 0 ? conditions[index] : undefined;
  const lastTransitionTime =
    previous && previous.status === next.status ? previous.lastTransitionTime : now();
  const value: ConditionValue = { ...next, lastTransitionTime };
  if (index >= 0) conditions[index] = value;
  else conditions.push(value);
  return conditions;
}

export function findCondition(
  conditions: readonly ConditionValue[] | undefined,
  type: string,
): ConditionValue | undefined {
  return conditions?.find((c) => c.type === type);
}
