/** The custom resources' REST paths: the one place that spells them out. */
import { paths } from "../kubePaths.ts";
import { ARCHIVES } from "./archive.ts";
import { CLASS_ARCHIVES } from "./classArchive.ts";
import { ASSIGNMENTS, SUBMISSIONS } from "./coursework.ts";
import { EXAMS } from "./exam.ts";
import { GROUP, VERSION } from "./group.ts";

export const TEMPLATES = "templates";
export const USERLANDS = "userlands";

/** The collection path in `namespace`, or one Template's path (and a subresource's, e.g. "status"). */
export const templatesPath = (namespace: string, name?: string, subresource?: string): string =>
  paths.namespaced(GROUP, VERSION, TEMPLATES, namespace, name, subresource);

/** The collection path in `namespace`, or one Userland's path (and a subresource's, e.g. "status"). */
export const userlandsPath = (namespace: string, name?: string, subresource?: string): string =>
  paths.namespaced(GROUP, VERSION, USERLANDS, namespace, name, subresource);

/** The collection path in `namespace`, or one Assignment's path (and a subresource's). */
export const assignmentsPath = (namespace: string, name?: string, subresource?: string): string =>
  paths.namespaced(GROUP, VERSION, ASSIGNMENTS, namespace, name, subresource);

/** The collection path in `namespace`, or one Submission's path (and a subresource's). */
export const submissionsPath = (namespace: string, name?: string, subresource?: string): string =>
  paths.namespaced(GROUP, VERSION, SUBMISSIONS, namespace, name, subresource);

/** The collection path in `namespace`, or one Archive's path (and a subresource's). */
export const archivesPath = (namespace: string, name?: string, subresource?: string): string =>
  paths.namespaced(GROUP, VERSION, ARCHIVES, namespace, name, subresource);

/** The collection path in `namespace`, or one ClassArchive's path (and a subresource's). */
export const classArchivesPath = (namespace: string, name?: string, subresource?: string): string =>
  paths.namespaced(GROUP, VERSION, CLASS_ARCHIVES, namespace, name, subresource);

/** The collection path in `namespace`, or one Exam's path (and a subresource's). */
export const examsPath = (namespace: string, name?: string, subresource?: string): string =>
  paths.namespaced(GROUP, VERSION, EXAMS, namespace, name, subresource);
