/**
 * Where the local identity provider keeps its sign-ins (oidc-provider's adapter): in memory, each
 * entry until it expires. oidc-provider's own development adapter keeps at most 1,000 entries
 * (an LRU); a sign-in takes several (interaction, session, grant, code, token), so at a class
 * rush (bench:rush with 1,000 students in 10 s) it evicted codes and tokens still in use and 351
 * of 1,000 sign-ins ended in invalid_grant or invalid_token. This one is bounded by time instead:
 * every entry carries its expiry, and expired entries are swept as new ones come.
 */
import type { Adapter, AdapterPayload } from "oidc-provider";

interface Entry {
  payload: AdapterPayload;
  /** Epoch ms; Infinity: no expiry given. */
  expiresAt: number;
}

/** Sweep expired entries after this many writes (cheap enough at a rush's pace). */
const SWEEP_EVERY = 500;

/** The models whose entries belong to a grant (revoked with it), as in oidc-provider's own adapter. */
const GRANTABLE = new Set([
  "AccessToken",
  "AuthorizationCode",
  "RefreshToken",
  "DeviceCode",
  "BackchannelAuthenticationRequest",
  "PreAuthorizedCode",
]);

/** One store for every model (oidc-provider asks for one adapter per model name). */
export function memoryAdapters(now: () => number = Date.now): (model: string) => Adapter {
  const entries = new Map<string, Entry>();
  /** Session uid → session id, and grant id → the keys of its tokens and codes. */
  const sessionsByUid = new Map<string, string>();
  const grants = new Map<string, Set<string>>();
  let writes = 0;

  const live = (key: string): AdapterPayload | undefined => {
    const entry = entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > now()) return entry.payload;
    entries.delete(key);
    return undefined;
  };
  const sweep = () => {
    const at = now();
    for (const [key, entry] of entries) if (entry.expiresAt <= at) entries.delete(key);
    for (const [uid, id] of sessionsByUid) if (!entries.has(`Session:${id}`)) sessionsByUid.delete(uid);
    for (const [grant, keys] of grants) {
      for (const key of keys) if (!entries.has(key)) keys.delete(key);
      if (keys.size === 0) grants.delete(grant);
    }
  };

  /** Drops the indexes `payload` (stored under `key`) is filed under. */
  const unindex = (model: string, id: string, key: string, payload: AdapterPayload) => {
    if (typeof payload.uid === "string" && sessionsByUid.get(payload.uid) === id)
      sessionsByUid.delete(payload.uid);
    if (GRANTABLE.has(model) && typeof payload.grantId === "string") grants.get(payload.grantId)?.delete(key);
  };

  return (model) => {
    const key = (id: string) => `${model}:${id}`;
    return {
      upsert(id, payload, expiresIn) {
        const previous = entries.get(key(id));
        if (previous) unindex(model, id, key(id), previous.payload);
        entries.set(key(id), {
          payload,
          expiresAt: typeof expiresIn === "number" ? now() + expiresIn * 1000 : Infinity,
        });
        if (model === "Session" && typeof payload.uid === "string") sessionsByUid.set(payload.uid, id);
        if (GRANTABLE.has(model) && typeof payload.grantId === "string") {
          const members = grants.get(payload.grantId) ?? new Set<string>();
          members.add(key(id));
          grants.set(payload.grantId, members);
        }
        if (++writes % SWEEP_EVERY === 0) sweep();
        return Promise.resolve();
      },
      find(id) {
        return Promise.resolve(live(key(id)));
      },
      findByUid(uid) {
        const id = sessionsByUid.get(uid);
        return Promise.resolve(id === undefined ? undefined : live(key(id)));
      },
      findByUserCode(userCode) {
        for (const [k, entry] of entries)
          if (k.startsWith(`${model}:`) && entry.payload.userCode === userCode)
            return Promise.resolve(live(k));
        return Promise.resolve(undefined);
      },
      consume(id) {
        const payload = live(key(id));
        if (payload) payload.consumed = Math.floor(now() / 1000);
        return Promise.resolve();
      },
      destroy(id) {
        const entry = entries.get(key(id));
        entries.delete(key(id));
        if (entry) unindex(model, id, key(id), entry.payload);
        return Promise.resolve();
      },
      revokeByGrantId(grantId) {
        for (const member of grants.get(grantId) ?? []) entries.delete(member);
        grants.delete(grantId);
        return Promise.resolve();
      },
    };
  };
}
