/**
 * Forgetting what has expired in a snapshot: a little as `evaluate` goes (the leaf each change
 * writes, and one more leaf in turn), or all at once with {@link prune}.
 */
import { assertNow, assertUsage } from "./host-input.js";
import { sealed } from "./immer.js";
import { asSnapshotError } from "./snapshot-check.js";
import { exhaustive, inLayout, nextUsage, type BucketsDraft, replaceBucket, tidyNode, tidyPath, usageData, windowExpiry, type Buckets, type CapDay, type CapRecord, type SnapshotWindow, type Tidy, type Usage } from "./snapshot.js";
import { CAP_KEEP_MS, type KeyRecord } from "./store.js";

/** Whether a window has ended by `now`, and the other one kept beside it too (charge.ts `readOpen`). */
export function windowExpired(record: SnapshotWindow, now: number): boolean {
  if (record.expiresAt === undefined || !(now >= record.expiresAt)) return false;
  const other = record.other;
  return other === undefined || other === null || !(other.count > 0) || !(now < other.expiresAt);
}

/** What each kind keeps of a record by `now`: budget windows and idempotency records go once expired. */
export function tidyWindow(now: number): Tidy<SnapshotWindow> {
  return new WindowTidy(now);
}
export function tidyKey(now: number): Tidy<KeyRecord> {
  return new KeyTidy(now);
}
/** A daily cap keeps its days until {@link CAP_KEEP_MS} after each ends; it goes with the last of them. */
export function tidyCap(now: number): Tidy<CapRecord> {
  return new CapTidy(now);
}

/** When an idempotency record can be forgotten: its end (NaN, read as at any time, for one that has none). */
export function keyExpiry(record: KeyRecord): number {
  return typeof record.expiresAt === "number" ? record.expiresAt : Number.NaN;
}

/** When a daily cap record can change: {@link CAP_KEEP_MS} after the end of its earliest day (a day without a readable end, or no day at all: at any time). */
export function capExpiry(record: CapRecord): number {
  let least = Infinity;
  let any = false;
  for (const day in record.days) {
    if (!Object.hasOwn(record.days, day)) continue;
    any = true;
    const resetAt: unknown = record.days[day]!.resetAt;
    least = Math.min(least, typeof resetAt === "number" ? resetAt + CAP_KEEP_MS : Number.NaN);
  }
  return any ? least : -Infinity;
}

class WindowTidy implements Tidy<SnapshotWindow> {
  constructor(readonly by: number) {}
  keep(record: SnapshotWindow): SnapshotWindow | undefined {
    return windowExpired(record, this.by) ? undefined : record;
  }
  expiry(record: SnapshotWindow): number {
    return windowExpiry(record);
  }
}

class KeyTidy implements Tidy<KeyRecord> {
  constructor(readonly by: number) {}
  keep(record: KeyRecord): KeyRecord | undefined {
    return this.by >= record.expiresAt ? undefined : record;
  }
  expiry(record: KeyRecord): number {
    return keyExpiry(record);
  }
}

class CapTidy implements Tidy<CapRecord> {
  constructor(readonly by: number) {}
  keep(record: CapRecord): CapRecord | undefined {
    const now = this.by;
    // most records have no day that ended: looked at first, and then nothing is copied
    let ended = false;
    let any = false;
    for (const day in record.days) {
      if (!Object.hasOwn(record.days, day)) continue;
      any = true;
      if (!(now < record.days[day]!.resetAt + CAP_KEEP_MS)) ended = true; // a day without a readable end is ended too
    }
    if (!ended) return any ? record : undefined;
    const days: Record<string, CapDay> = {};
    let kept = 0;
    for (const day in record.days) {
      if (Object.hasOwn(record.days, day) && now < record.days[day]!.resetAt + CAP_KEEP_MS) (days[day] = record.days[day]!), kept++;
    }
    return kept === 0 ? undefined : Object.freeze({ ...record, days: Object.freeze(days) });
  }
  expiry(record: CapRecord): number {
    return capExpiry(record);
  }
}

/**
 * One more leaf of a kind swept per change: in the bucket of `seq`'s slot (the 256 buckets in turn),
 * the leaf of its split tree that this visit's path names (the leaves in turn across visits). Bounded
 * work per change, whatever the snapshot holds: at most one leaf of {@link LEAF_MAX} records, where
 * sweeping the whole bucket cost n / 256 records (~400 at 100 000 credentials, 60 % of `evaluate`).
 */
export function sweepSlot<T>(draft: BucketsDraft<T>, seq: number, tidy: Tidy<T>): void {
  // seq moves by 1, or by 2 when a cap member is numbered: this walks all 256 buckets either way
  const slot = ((seq >>> 1) + (seq & 1) * 128) & 255;
  // which leaf: a slot is hit once by an even and once by an odd seq in each 512; successive visits
  // (seq moving by 1 or by 2) give paths whose low 4 bits run through all 16, then the next 4 bits
  const visit = (seq >>> 9) + (seq & 1) * 8;
  draft.update(slot & 15, slot >>> 4, (node) => (node === undefined ? undefined : tidyPath(node, visit, tidy)));
}

/** Every leaf of a bucketed kind through `tidy`: new objects only where something was forgotten. */
function tidyAll<T>(buckets: Buckets<T>, tidy: Tidy<T>): Buckets<T> {
  for (let slot = 0; slot < 256; slot++) buckets = replaceBucket(buckets, slot & 15, slot >>> 4, (node) => (node === undefined ? undefined : tidyNode(node, tidy)));
  return buckets;
}

/**
 * Forgets every record of a snapshot that has expired by `now`: ended budget windows, idempotency
 * records past their 24 hours, and days of daily caps a week after they ended (a clock stepped back across midnight still finds a day it kept). `evaluate` already forgets
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
  // a snapshot written before is placed anew (a leaf that tidy rebuilds may split, by placeOf);
  // when nothing has expired the host's own object is handed back all the same
  try {
    const usage = inLayout(usageData(snapshot));
    // tidyAll hands back the same buckets where nothing has expired
    // every record is read, whatever the leaves' bounds say (a bound a host edited cannot keep a record)
    const windows = tidyAll(usage.windows, exhaustive(tidyWindow(now)));
    const keys = tidyAll(usage.keys, exhaustive(tidyKey(now)));
    const caps = tidyAll(usage.caps, exhaustive(tidyCap(now)));
    if (windows === usage.windows && keys === usage.keys && caps === usage.caps) return sealed(usageData(snapshot)) as unknown as Usage;
    return nextUsage(usage, usage.seq, usage.at, windows, caps, keys);
  } catch (error) {
    // no host code runs here: what is thrown is the snapshot's shape
    throw asSnapshotError(error);
  }
}
