/** userland.dev/v1alpha1: the Template, Userland, Assignment, Submission, Archive and ClassArchive custom resources. */
export * from "./group.ts";
export * from "./paths.ts";
export * from "./template.ts";
export * from "./userland.ts";
export * from "./coursework.ts";
export * from "./archive.ts";
export * from "./classArchive.ts";
export * from "./exam.ts";
export { Condition } from "./schema.ts";
