/**
 * The counters of the pure API: the immutable {@link Usage} snapshot, its layout (records in two
 * levels of 16 buckets by a hash of their key) and the reads of it.
 */
import { freeze } from "immer";
import { fnv1a } from "./hash.js";
import type { KeyRecord, WindowRecord } from "./store.js";

/**
 * Records of one kind by a hash of their key: two levels of 16 buckets (objects keyed "0".."15"), as
 * in every snapshot so far; below them a bucket is either records (key → record) or, once it holds
 * more than {@link LEAF_MAX}, an array of 16 such nodes by the next 4 bits of the hash. Snapshots
 * written before buckets split are the same layout with no arrays. Internal.
 */
export type Buckets<T> = Readonly<Record<string, Readonly<Record<string, BucketNode<T>>>>>;
/** A bucket below the first two levels: records by key, or 16 buckets by the next 4 bits. */
export type BucketNode<T> = Readonly<Record<string, T>> | readonly BucketNode<T>[];
/** What a change keeps of a record it passes: the same record, a smaller copy, or nothing once expired. */
export type Tidy<T> = (record: T) => T | undefined;

/** A bucket splits past this many records: a change copies at most this many, whatever the snapshot holds. */
export const LEAF_MAX = 16;
const NO_RECORDS: Readonly<Record<string, never>> = Object.freeze({});

/** A budget window in a snapshot: when it ends is kept with it, so that it can be forgotten then. */
export interface SnapshotWindow extends WindowRecord {
  /** start + the budget's window (ms); absent in snapshots written before 0.1.0 was final. */
  readonly expiresAt?: number;
}

/** One day of a daily cap: who counted, and when the day ends. */
export interface CapDay {
  readonly resetAt: number;
  readonly members: readonly string[];
}

/**
 * A daily cap's counts, by day. Each day counts on its own: a request stamped on another day (a
 * clock stepped across midnight, or days ahead) never replaces or wipes today's count. `latest` is
 * the day of the latest charge: a release ticket of another day no longer uncounts, as in every store
 * (`ticketDayCounts` in charge.ts).
 */
export interface CapRecord {
  readonly latest: number;
  readonly days: Readonly<Record<string, CapDay>>;
}

declare const usageSnapshot: unique symbol;

/**
 * The counters of the pure API: an immutable (frozen) snapshot, replaced, never changed, by
 * `evaluate` and `release`. Opaque: start from `emptyUsage()` and pass on the `usage` each call
 * returns; its layout is not part of the API. It is plain JSON-safe data, so it can be stored and
 * restored as a whole.
 */
export interface Usage {
  /** @internal brand: made by `emptyUsage`, `evaluate` and `release` only. */
  readonly [usageSnapshot]: true;
}

/**
 * What a {@link Usage} holds. Budget windows and idempotency records, which grow with the
 * credentials a snapshot has seen, are kept in buckets by a hash of their key (see {@link Buckets}): a
 * change copies the bucket indexes on the way to one bucket of at most {@link LEAF_MAX} records, not
 * every record, so `evaluate` costs about the same with 2 or 100 000 credentials in one snapshot.
 */
export interface UsageData {
  /** Counts changes; part of derived request ids, so that two identical requests get two ids. */
  readonly seq: number;
  /**
   * The `now` of the latest change (ms). `evaluate` forgets a record only once it has expired by
   * both this time and its own `now`, so that one request stamped days ahead forgets nothing.
   */
  readonly at?: number;
  readonly windows: Buckets<SnapshotWindow>;
  readonly caps: Buckets<CapRecord>;
  readonly keys: Buckets<KeyRecord>;
}


export function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The record stored under `key`, wherever its bucket is. */
export function recordIn<T>(buckets: Buckets<T>, key: string): T | undefined {
  const h = fnv1a(key);
  let node = own(own(buckets, String(h & 15)), String((h >>> 4) & 15));
  for (let shift = 8; Array.isArray(node); shift += 4) node = (node as readonly BucketNode<T>[])[(h >>> shift) & 15];
  return own(node as Readonly<Record<string, T>> | undefined, key);
}

/** `record` with `key` set to `value` (or without `key` when `value` is undefined), frozen; the same object when nothing changes. */
function withKey<V>(record: Readonly<Record<string, V>> | undefined, key: string, value: V | undefined): Readonly<Record<string, V>> | undefined {
  if (own(record, key) === value) return record;
  const next: Record<string, V> = { ...record };
  if (value === undefined) delete next[key];
  else next[key] = value;
  return Object.keys(next).length === 0 ? undefined : Object.freeze(next);
}

/**
 * Replaces the bucket at (outer, inner) by what `change` makes of it, copying the two bucket indexes
 * on its way and nothing else: structural sharing, only new objects are frozen.
 */
export function replaceBucket<T>(buckets: Buckets<T>, outer: number, inner: number, change: (node: BucketNode<T> | undefined) => BucketNode<T> | undefined): Buckets<T> {
  const level = own(buckets, String(outer));
  const node = own(level, String(inner));
  const next = change(node);
  if (next === node) return buckets;
  return withKey(buckets, String(outer), withKey(level, String(inner), next === NO_RECORDS ? undefined : next)) ?? NO_RECORDS;
}

/** Splits records into 16 buckets by the 4 bits of their hash at `shift`, again where one is still too large. */
function split<T>(records: Record<string, T>, shift: number): BucketNode<T> {
  const parts: Record<string, T>[] = Array.from({ length: 16 }, () => ({}));
  for (const key in records) if (Object.hasOwn(records, key)) parts[(fnv1a(key) >>> shift) & 15]![key] = records[key]!;
  return Object.freeze(parts.map((part) => (Object.keys(part).length > LEAF_MAX && shift < 28 ? split(part, shift + 4) : Object.freeze(part))));
}

/** A leaf's records, each passed through `tidy`; `key` is set to `value` (removed when undefined). */
function rebuildLeaf<T>(leaf: Readonly<Record<string, T>> | undefined, shift: number, tidy: Tidy<T>, key?: string, value?: T): BucketNode<T> {
  const out: Record<string, T> = {};
  let size = 0;
  for (const k in leaf) {
    if (k === key || !Object.hasOwn(leaf, k)) continue;
    const kept = tidy(leaf[k]!);
    if (kept !== undefined) (out[k] = kept), size++;
  }
  if (key !== undefined && value !== undefined) (out[key] = value), size++;
  if (size === 0) return NO_RECORDS;
  return size > LEAF_MAX && shift < 32 ? split(out, shift) : Object.freeze(out);
}

/** `node` with one leaf rebuilt: the one `key` hashes to, or the one `pick` chooses at each split (for sweeping). */
function changeNode<T>(node: BucketNode<T> | undefined, h: number, shift: number, rebuild: (leaf: Readonly<Record<string, T>> | undefined, shift: number) => BucketNode<T> | undefined): BucketNode<T> | undefined {
  if (!Array.isArray(node)) return rebuild(node as Readonly<Record<string, T>> | undefined, shift);
  const branch = node as readonly BucketNode<T>[];
  const i = (h >>> shift) & 15;
  const child = changeNode(branch[i], h, shift + 4, rebuild);
  if (child === branch[i]) return node;
  const copy = branch.slice();
  copy[i] = child ?? NO_RECORDS;
  return Object.freeze(copy);
}

/**
 * Sets (or, with `change` returning undefined, removes) the record under `key` and passes every
 * other record of its leaf through `tidy` (forgetting what has expired): bounded work per change.
 */
export function changeIn<T>(buckets: Buckets<T>, key: string, change: (record: T | undefined) => T | undefined, tidy: Tidy<T>): Buckets<T> {
  const h = fnv1a(key);
  return replaceBucket(buckets, h & 15, (h >>> 4) & 15, (node) =>
    changeNode(node, h, 8, (leaf, shift) => rebuildLeaf(leaf, shift, tidy, key, change(own(leaf, key)))),
  );
}

/** Every record below `node` through `tidy`: the same node when nothing changes, new objects only where something did. */
export function tidyNode<T>(node: BucketNode<T>, tidy: Tidy<T>, shift = 8): BucketNode<T> {
  if (Array.isArray(node)) {
    const branch = node as readonly BucketNode<T>[];
    const next = branch.map((child) => tidyNode(child, tidy, shift + 4));
    return next.every((child, i) => child === branch[i]) ? node : Object.freeze(next);
  }
  const leaf = node as Readonly<Record<string, T>>;
  for (const k in leaf) if (Object.hasOwn(leaf, k) && tidy(leaf[k]!) !== leaf[k]) return rebuildLeaf(leaf, shift, tidy);
  return node;
}

/** The members a daily cap counts on one day (for tests and inspection). */
export function capMembers(usage: Usage, key: string, day: number): readonly string[] {
  return own(recordIn(usageData(usage).caps, key)?.days, String(day))?.members ?? [];
}

/** Every record of a bucketed kind, for tests and inspection. */
export function recordsIn<T>(buckets: Buckets<T>): [string, T][] {
  const out: [string, T][] = [];
  const walk = (node: BucketNode<T>): void => {
    if (Array.isArray(node)) for (const child of node as readonly BucketNode<T>[]) walk(child);
    else for (const key in node) if (Object.hasOwn(node, key)) out.push([key, (node as Readonly<Record<string, T>>)[key]!]);
  };
  for (const inner of Object.values(buckets)) for (const node of Object.values(inner)) walk(node);
  return out;
}


const EMPTY = freeze({ seq: 0, windows: {}, caps: {}, keys: {} }, true) as UsageData as unknown as Usage;

/** The data inside a snapshot (for the engine and its tests). */
export function usageData(usage: Usage): UsageData {
  return usage as unknown as UsageData;
}

/**
 * An empty set of counters to start from.
 *
 * @returns a frozen, empty {@link Usage}.
 * @example
 * let usage = emptyUsage();
 */
export function emptyUsage(): Usage {
  return EMPTY;
}

