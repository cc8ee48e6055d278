/**
 * Forgetting what has expired in a snapshot: one bucket at a time as `evaluate` goes, or all at
 * once with {@link prune}.
 */
import { produce } from "immer";
import { assertNow, assertUsage } from "./host-input.js";
import { own, recordsIn, usageData, type Buckets, type CapDay, type CapRecord, type SnapshotWindow, type Usage } from "./snapshot.js";
import type { KeyRecord } from "./store.js";

export function windowExpired(record: SnapshotWindow, now: number): boolean {
  return record.expiresAt !== undefined && now >= record.expiresAt;
}

type Draft<T> = Record<string, Record<string, Record<string, T>>>;

/**
 * Deletes the expired records of one bucket of a draft. Finds them in the base snapshot (plain
 * objects: no draft is made for a record that stays) and checks each again in the draft, where this
 * change may have written it anew.
 */
export function pruneBucket<T>(draft: Draft<T>, base: Buckets<T>, outer: string, inner: string, expired: (record: T) => boolean): void {
  const bucket = own(own(base, outer), inner);
  if (bucket === undefined) return;
  let gone: string[] | undefined;
  for (const key in bucket) if (Object.hasOwn(bucket, key) && expired(bucket[key]!)) (gone ??= []).push(key);
  if (gone === undefined) return;
  const target = draft[outer]![inner]!;
  for (const key of gone) if (Object.hasOwn(target, key) && expired(target[key]!)) delete target[key];
  if (Object.keys(target).length === 0) {
    delete draft[outer]![inner];
    if (Object.keys(draft[outer]!).length === 0) delete draft[outer];
  }
}

function capExpired(record: CapRecord, now: number): boolean {
  for (const day in record.days) if (Object.hasOwn(record.days, day) && now < record.days[day]!.resetAt) return false;
  return true;
}

export function pruneCapBucket(draft: Draft<CapRecord>, base: Buckets<CapRecord>, outer: string, inner: string, now: number): void {
  pruneBucket(draft, base, outer, inner, (r) => capExpired(r, now));
  const bucket = own(own(base, outer), inner);
  if (bucket === undefined) return;
  for (const key in bucket) {
    if (!Object.hasOwn(bucket, key) || !capHasExpiredDay(bucket[key]!, now)) continue;
    const record = own(own(own(draft, outer), inner), key);
    if (record === undefined) continue;
    const days = record.days as Record<string, CapDay>;
    for (const day in days) if (Object.hasOwn(days, day) && now >= days[day]!.resetAt) delete days[day];
  }
}

function anyIn<T>(buckets: Buckets<T>, expired: (record: T) => boolean): boolean {
  for (const [, record] of recordsIn(buckets)) if (expired(record)) return true;
  return false;
}

function capHasExpiredDay(record: CapRecord, now: number): boolean {
  for (const day in record.days) if (Object.hasOwn(record.days, day) && now >= record.days[day]!.resetAt) return true;
  return false;
}

/**
 * Forgets every record of a snapshot that has expired by `now`: ended budget windows, idempotency
 * records past their 24 hours, and days of daily caps that have ended. `evaluate` already forgets
 * as it goes (one bucket per change); call this to shrink a snapshot at once, e.g. before storing
 * it. Pure: the same inputs give the same snapshot, and nothing that can still count is dropped.
 * The host's clock is trusted here: a `now` days ahead forgets today's counts.
 *
 * @param usage - a snapshot from `emptyUsage()` or `evaluate`.
 * @param now - ms since the epoch (a time a `Date` can hold).
 * @returns the snapshot without expired records; the same object when nothing has expired.
 * @throws PolicyConfigError when `usage` is not a snapshot or `now` is not a time.
 * @example
 * usage = prune(usage, Date.now());
 * await save(JSON.stringify(usage));
 */
export function prune(snapshot: Usage, now: number): Usage {
  assertUsage(snapshot);
  assertNow(now, "now");
  const usage = usageData(snapshot);
  const windowGone = (r: SnapshotWindow) => windowExpired(r, now);
  const keyGone = (r: KeyRecord) => now >= r.expiresAt;
  const capGone = (r: CapRecord) => capHasExpiredDay(r, now);
  if (!anyIn(usage.windows, windowGone) && !anyIn(usage.keys, keyGone) && !anyIn(usage.caps, capGone)) return snapshot;
  const next = produce(usage, (draft) => {
    for (let slot = 0; slot < 256; slot++) {
      const outer = String(slot & 15);
      const inner = String(slot >>> 4);
      pruneBucket(draft.windows as Draft<SnapshotWindow>, usage.windows, outer, inner, windowGone);
      pruneBucket(draft.keys as Draft<KeyRecord>, usage.keys, outer, inner, keyGone);
      pruneCapBucket(draft.caps as Draft<CapRecord>, usage.caps, outer, inner, now);
    }
  });
  return next as unknown as Usage;
}
