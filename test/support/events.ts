/** Reading the Events recorded about an object. */
import type { CoreV1Event } from "@kubernetes/client-node";
import { adminRest } from "./resources.ts";

export async function listEvents(namespace: string, involvedName: string): Promise<CoreV1Event[]> {
  const rest = await adminRest();
  const list = await rest.list<CoreV1Event>(`/api/v1/namespaces/${namespace}/events`, {
    query: { fieldSelector: `involvedObject.name=${involvedName}` },
  });
  return list.items;
}
