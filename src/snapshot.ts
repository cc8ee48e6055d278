/**
 * The counters of the pure API: the immutable {@link Usage} snapshot, its layout (records in two
 * levels of 16 buckets by a hash of their key) and the reads of it.
 */
import { freeze } from "immer";
import { fnv1a } from "./hash.js";
import type { KeyRecord, WindowRecord } from "./store.js";

/** Records of one kind in two levels of 16 buckets, by a hash of their key (see {@link UsageData}). Internal. */
export type Buckets<T> = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, T>>>>>>;

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
 * credentials a snapshot has seen, are kept in two levels of 16 buckets by a hash of their key: a
 * change copies two bucket indexes of at most 16 entries and one bucket of about n / 256 records,
 * not every record, so `evaluate` costs about the same with 2 or 10 000 credentials in one snapshot.
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


function bucketsOf(key: string): [string, string] {
  const h = fnv1a(key);
  return [String(h & 15), String((h >>> 4) & 15)];
}

export function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The record stored under `key`, wherever its bucket is. */
export function recordIn<T>(buckets: Buckets<T>, key: string): T | undefined {
  const [outer, inner] = bucketsOf(key);
  return own(own(own(buckets, outer), inner), key);
}


/** Writes the record under `key` into a draft, making its buckets as needed. */
export function writeIn<T>(buckets: Record<string, Record<string, Record<string, T>>>, key: string, record: T): void {
  const [outer, inner] = bucketsOf(key);
  ((buckets[outer] ??= {})[inner] ??= {})[key] = record;
}

/** Removes the record stored under `key` from a draft (for `reset`); true when it was there. */
export function removeIn<T>(buckets: Record<string, Record<string, Record<string, T>>>, key: string): boolean {
  const [outer, inner] = bucketsOf(key);
  const records = own(own(buckets, outer), inner);
  if (records === undefined || !Object.hasOwn(records, key)) return false;
  delete records[key];
  return true;
}

/** The members a daily cap counts on one day (for tests and inspection). */
export function capMembers(usage: Usage, key: string, day: number): readonly string[] {
  return own(recordIn(usageData(usage).caps, key)?.days, String(day))?.members ?? [];
}

/** Every record of a bucketed kind, for tests and inspection. */
export function recordsIn<T>(buckets: Buckets<T>): [string, T][] {
  return Object.values(buckets).flatMap((inner) => Object.values(inner).flatMap((records) => Object.entries(records)));
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

