/** userland.dev/v1alpha1: the Template and Userland custom resources. */
export const GROUP = "userland.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

export * from "./template.ts";
export * from "./userland.ts";
export { Condition } from "./schema.ts";
