/**
 * The key layout (docs/redis.md, "Key layout"): how the store names its own keys, which hash slot a
 * key goes to with Redis Cluster, and how long keys outlive what they hold.
 */
import { CAP_KEEP_MS, type ResetRequest } from "../store.js";

/**
 * Cap sets outlive their day (by the clock that charged them) by this much, as MemoryStore and the
 * pure snapshot keep a day: so that a host whose clock runs behind, or one stepped back across
 * midnight, still finds them, and a host whose clock ran ahead (its day's end sooner than the true
 * one) never makes one vanish while the day still runs for the others. An hour let a set charged
 * by a clock an hour ahead vanish an hour before the true midnight, and the same day's sends were
 * counted afresh (found by a clock drill: 6 through a cap of 3).
 */
export const CAP_GRACE_MS = CAP_KEEP_MS;
/**
 * Windows and idempotency records outlive their end (in the deciding clock) by this much. The script
 * decides from the stored start and expiry, so a key's TTL is only garbage collection; the slack
 * keeps a record alive for a host whose clock runs a little behind Redis's.
 */
export const EXPIRY_SLACK_MS = 10_000;
/**
 * The member sequence outlives every cap set that may hold its members: a day, the grace, and a
 * key's 24 h on a cluster, with a day to spare. Restarted sooner, it handed out members an older
 * set still held (a review: with the grace a week, a release of a days-old ticket could clear
 * today's record of a reused key, and its retry was sent again).
 */
export const SEQ_TTL_MS = 3 * 24 * 60 * 60 * 1000 + CAP_GRACE_MS;

/** The store key of the member sequence (`m1`, `m2`, …). */
export const SEQ_KEY = "seq";

/**
 * The store key of the index of a credential's idempotency records (`ChargeRequest.idempotency.scope`):
 * a sorted set of the records' keys by when each ends, so that the charge drops the ended ones as
 * it adds one (docs/redis.md).
 */
export function indexKey(scope: string): string {
  return `x:${scope}`;
}

/**
 * The store key of the index an earlier version kept: a set that only grew (found by a Redis review:
 * a credential that made keyed writes every day kept every key it had ever used, 200 000 members and
 * 20 MB after four days). Written no longer; a reset still clears what it lists, and it expires.
 */
export function legacyIndexKey(scope: string): string {
  return `i:${scope}`;
}

/** Index entries this long past their record's end (in the deciding clock) are dropped: hosts' clocks differ. */
export const INDEX_GRACE_MS = 60 * 60 * 1000;

/** The store key of a daily cap's set of members on one day (the cap's store key, then the day). */
export function capSetKey(cap: string, day: number): string {
  return `${cap}:${day}`;
}

/** The store key a cluster's reset moves a day's members aside to (cluster-release.ts reads it). */
export function asideKey(capSet: string): string {
  return `${capSet}:r`;
}

/** The store key of a store's remembered outcomes for one time slot of `dedupeMs`. */
export function memoKey(instance: string, slot: number): string {
  return `r:${instance}:${slot}`;
}

/**
 * A key in Redis: the prefix, the hash tag with a cluster, the store key.
 *
 * @param tag - the hash tag (ignored without a cluster).
 */
export function redisKey(prefix: string, cluster: boolean, key: string, tag: string): string {
  return cluster ? `${prefix}{${tag}}${key}` : prefix + key;
}

/**
 * The id of a store key built by `store-keys.ts` (`<kind>:<length>.<id>…`), or undefined for a key of
 * another shape.
 */
function scopedId(key: string, kinds: string): string | undefined {
  const match = /^([a-z]):(\d{1,6})\./.exec(key);
  if (match === null || !kinds.includes(match[1]!)) return undefined;
  const length = Number(match[2]);
  const start = match[0].length;
  if (key.length < start + length) return undefined;
  return `${length}.${key.slice(start, start + length)}`;
}

/**
 * The hash tag of a credential's keys: its budgets (`b:`), idempotency records (`k:`) and test-send
 * cap (`t:`) share one slot. Keys of another shape (a host's own store tests) share the tag `_`.
 */
export function credentialTag(keys: readonly string[]): string {
  let tag: string | undefined;
  for (const key of keys) {
    const id = scopedId(key, "bk");
    const next = id === undefined ? "_" : `c${id}`;
    if (tag !== undefined && tag !== next) throw new Error(`newsletter-policy/redis: one request's keys name two credentials (${keys.join(", ")}); with cluster: true they must share a slot`);
    tag = next;
  }
  return tag ?? "_";
}

/**
 * The hash tag of a daily cap: a credential's test-send cap (`t:`) sits in the credential's slot,
 * a newsletter's dispatch cap (`d:`) in the newsletter's; a cap key of another shape in its own.
 */
export function capSlotTag(key: string): string {
  const credential = scopedId(key, "t");
  if (credential !== undefined) return `c${credential}`;
  const newsletter = scopedId(key, "d");
  return newsletter === undefined ? `n:${key}` : `n${newsletter}`;
}

/** A dispatch cap's tag (a newsletter's slot), as opposed to a credential's. */
export function isNewsletterTag(tag: string): boolean {
  return tag.startsWith("n");
}

/**
 * A reset split by hash slot. What `policy.reset` asks for always lies in one slot (a credential's
 * windows, test-send cap and idempotency index; or a newsletter's dispatch cap): one round trip.
 * Keys of other shapes (a host's own store tests) may span slots: one script per slot.
 */
export function bySlot(request: ResetRequest): Map<string, ResetRequest> {
  const parts = new Map<string, { windows: string[]; caps: ResetRequest["caps"][number][]; idempotencyScope?: string }>();
  const part = (tag: string) => {
    let p = parts.get(tag);
    if (p === undefined) parts.set(tag, (p = { windows: [], caps: [] }));
    return p;
  };
  for (const key of request.windows) part(credentialTag([key])).windows.push(key);
  for (const cap of request.caps) part(capSlotTag(cap.key)).caps.push(cap);
  // the index and the records sit where the charge put them: in the slot of the records' keys
  if (request.idempotencyScope !== undefined) part(credentialTag([`${request.idempotencyScope}:`])).idempotencyScope = request.idempotencyScope;
  return parts;
}
