/** The API group and version of the Template and Userland custom resources. */
export const GROUP = "userland.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
