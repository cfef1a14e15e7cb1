/** userland.dev/v1alpha1: the Template and Userland custom resources. */
export * from "./group.ts";
export * from "./paths.ts";
export * from "./template.ts";
export * from "./userland.ts";
export { Condition } from "./schema.ts";
