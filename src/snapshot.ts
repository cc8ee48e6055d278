/**
 * The counters of the pure API: the immutable {@link Usage} snapshot, its layout (records in two
 * levels of 16 buckets by a hash of their key) and the reads of it.
 */
import { freeze } from "immer";
import { fnv1a } from "./hash.js";
import { nextSnapshot } from "./immer.js";
import { budgetSubjectEnd } from "./store-keys.js";
import type { KeyRecord, WindowRecord } from "./store.js";

/**
 * Records of one kind by a hash of their key: two levels of 16 slots, as in every snapshot so far;
 * below them a bucket is either records (key → record) or, once it holds more than
 * {@link LEAF_MAX}, an array of 16 such nodes by the next 4 bits of the hash. A level is written as
 * an array of 16 (an empty slot holds an empty object); snapshots written before hold objects keyed
 * "0".."15" without the empty slots, and buckets that never split: both are read as they are, and
 * become the new layout where they are written. Internal.
 */
export type Buckets<T> = Level<Level<BucketNode<T>>>;
/** One of the first two levels: 16 slots, as an array (or, in older snapshots, an object keyed "0".."15"). */
export type Level<X> = readonly X[] | Readonly<Record<string, X>>;
/**
 * A bucket below the first two levels: a leaf, or (a branch) 16 buckets by the next 4 bits. A leaf is
 * written as pairs (`[key, record, key, record, …]`: copied and read in a loop, where an object with
 * its own set of keys costs V8 a new hidden class and a slow copy); snapshots written before hold
 * leaves as objects (key → record), read as they are. An empty bucket is an empty object.
 */
export type BucketNode<T> = Readonly<Record<string, T>> | Pairs<T> | readonly BucketNode<T>[];
/**
 * A leaf's records as pairs: key at even indexes, its record after it; a leaf this version writes
 * ends with one more element, its bound ({@link boundOf}). Leaves written before hold the pairs alone.
 */
export type Pairs<T> = readonly (string | T | number)[];

/**
 * What a change keeps of the records it passes, by a time (prune.ts makes one per kind). For every
 * record, `keep(record) === record` while `by < expiry(record)`: a leaf whose records all expire
 * after `by` is passed as it is, without reading them ({@link boundOf}).
 */
export interface Tidy<T> {
  /** The time it keeps by (ms); −Infinity: keeps every record as it is. */
  readonly by: number;
  /** The record itself, a smaller copy, or nothing once expired. */
  keep(record: T): T | undefined;
  /** The earliest time `keep` may change the record: −Infinity (or NaN) when it may at any time, Infinity never. */
  expiry(record: T): number;
  /**
   * Read every record, whatever a leaf's bound says (`prune`, which promises to forget everything
   * expired, even in a snapshot a host edited by hand). Default false: a leaf before its bound is passed unread.
   */
  readonly exhaustive?: boolean;
}

/** `tidy`, reading every record whatever a leaf's bound says (see {@link Tidy.exhaustive}). */
export function exhaustive<T>(tidy: Tidy<T>): Tidy<T> {
  return { by: tidy.by, keep: (record) => tidy.keep(record), expiry: (record) => tidy.expiry(record), exhaustive: true };
}

/** A tidy that keeps every record as it is (a snapshot placed anew, a reset): `expiry` says when each expires, for its leaf's bound. */
export function keepAll<T>(expiry: (record: T) => number): Tidy<T> {
  return { by: -Infinity, keep: (record) => record, expiry };
}

/**
 * When a budget window can be forgotten (prune.ts `tidyWindow`): its end (or the other window's kept
 * beside it, when that is later), or never in a snapshot written before ends were kept; an end that is not a number (a hand-edited snapshot: `null`) at any time.
 */
export function windowExpiry(record: SnapshotWindow): number {
  const end: unknown = record.expiresAt;
  const at = end === undefined ? Infinity : typeof end === "number" ? end : Number.NaN;
  // the other window kept beside it (charge.ts readOpen) is forgotten with it, once both have ended
  const other = record.other as { count?: unknown; expiresAt?: unknown } | null | undefined;
  if (other === undefined || other === null || other.count === 0) return at;
  const otherEnd = other.expiresAt;
  return typeof otherEnd !== "number" ? Number.NaN : otherEnd > at ? otherEnd : at;
}

/** A bucket splits past this many records: a change copies at most this many, whatever the snapshot holds. */
export const LEAF_MAX = 16;
const NO_RECORDS: Readonly<Record<string, never>> = Object.freeze({});
const NO_PAIRS: Pairs<never> = Object.freeze([]);
const DIGITS = Array.from({ length: 16 }, (_, i) => String(i));

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
 * clock stepped across midnight, or days ahead) never replaces or wipes today's count; a release
 * uncounts its ticket's member from its own day (`runRelease` in charge.ts). `latest`, the day of
 * the latest charge, is still written (snapshots of earlier builds are read with it) and no longer
 * read: a rule that a ticket of an earlier day uncounted nothing let a stamp behind midnight undo a
 * later release (found by a Redis drill).
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
  /**
   * 2: budget windows are placed by their credential's part of the key (see {@link placeOf}), so
   * that one credential's budgets share a leaf. Absent in snapshots written before (every record by
   * its whole key): read as they are, and placed anew (once, all of them) by their first change.
   */
  readonly layout?: typeof LAYOUT;
}

/** The layout every snapshot is written in (see {@link UsageData.layout}). */
export const LAYOUT = 2;

/**
 * Where a record goes: the hash of its key, except that a budget window's key
 * (`b:<length>.<subject>:<budget>`, store-keys.ts) is hashed up to the ":" after its subject, so
 * that one credential's budget windows share a leaf (a charge reads and writes one path, not one per
 * budget). Read by the length the key gives (store-keys.ts `budgetSubjectEnd`); a key not of that
 * shape is hashed whole.
 */
export function placeOf(key: string): number {
  const end = budgetSubjectEnd(key);
  return end < 0 ? fnv1a(key) : fnv1a(key, undefined, undefined, end);
}

/** A budget window of a snapshot, in the snapshot's own layout (`hash`: placeOf(key), when known). */
export function windowOf(usage: UsageData, key: string, hash?: number): SnapshotWindow | undefined {
  const place = hash ?? placeOf(key);
  if (usage.layout !== LAYOUT) {
    // where a snapshot written before layouts keeps it; or, when a host's serializer dropped the
    // layout of one written since, where this version put it (it was read as no window: a spent
    // budget answered 200; found by a diff review). A key is in one place or the other.
    return recordAt(usage.windows, key, fnv1a(key)) ?? recordAt(usage.windows, key, place);
  }
  return recordAt(usage.windows, key, place);
}

/**
 * `usage` in the layout every change writes: itself, or (a snapshot written before) its budget
 * windows placed anew, every one, once; the other kinds are placed as they were. Not frozen: the
 * base of a change, which hands back a new top level.
 */
export function inLayout(usage: UsageData): UsageData {
  if (usage.layout === LAYOUT) return usage;
  const draft = new BucketsDraft<SnapshotWindow>(NO_RECORDS);
  const keep = keepAll(windowExpiry);
  for (const [key, record] of recordsIn(usage.windows)) {
    // a record restored from JSON is frozen here: the new leaves are, and a sealed-looking kind is not walked again (immer.ts)
    const frozen = Object.isFrozen(record) ? record : freeze(record, true);
    draft.change(key, placeOf(key), () => frozen, keep);
  }
  return { ...usage, windows: draft.done(), layout: LAYOUT };
}


/**
 * The snapshot after a change of `base` (evaluate's commit, `release`, `prune`, `reset`): the three
 * kinds as given, `seq`, and the time of the latest change `at` (left out while there is none),
 * handed back through immer (immer.ts).
 */
export function nextUsage(base: UsageData, seq: number, at: number | undefined, windows: UsageData["windows"], caps: UsageData["caps"], keys: UsageData["keys"]): Usage {
  // every writer places an older snapshot's windows anew first (inLayout): stamping this layout over
  // windows in the old places would make their reads miss them, and admit past the budgets
  if (base.layout !== LAYOUT) throw new Error("newsletter-policy: internal: a change of a snapshot not in the current layout (pass it through inLayout first)");
  const layout = LAYOUT;
  const top: UsageData = at === undefined ? { seq, windows, caps, keys, layout } : { seq, at, windows, caps, keys, layout };
  return nextSnapshot(base, top) as unknown as Usage;
}

export function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Slot `i` of a level: undefined when empty (absent, or an empty object). */
export function slotOf<X>(level: Level<X> | undefined, i: number): X | undefined {
  if (level === undefined) return undefined;
  let value: X | undefined;
  if (Array.isArray(level)) {
    // nothing this library writes (below): a level of another length was read as empty buckets
    if (level.length !== 16) notBuckets(level);
    value = (level as readonly X[])[i];
  } else value = own(level as Readonly<Record<string, X>>, DIGITS[i]!);
  // the engine's own slots first: its empty object, or an array (a level, branch or leaf: never empty)
  if (value === NO_RECORDS) return undefined;
  if (Array.isArray(value)) return value;
  if (value === undefined) return undefined;
  if (typeof value === "object" && value !== null) return isEmpty(value) ? undefined : value;
  // nothing this library writes: a null or a number was read as an empty bucket, and a spent budget
  // as room (found by a black-box review); the callers report it as the snapshot's (snapshot-check.ts)
  return notBuckets(value);
}

/** What {@link slotOf} and {@link inLeaf} throw for a level or bucket no snapshot holds (a cold path: kept out of them). */
function notBuckets(value: unknown): never {
  const what = value === null ? "null" : Array.isArray(value) ? `a list of ${value.length}, not 16` : typeof value;
  throw new TypeError(`a level or bucket of the snapshot is ${what}, not records`);
}

/** An empty object (an empty slot, or a leaf with no records); never an array. */
function isEmpty(value: unknown): boolean {
  if (value === NO_RECORDS) return true;
  if (typeof value !== "object" || Array.isArray(value)) return false;
  for (const key in value) if (Object.hasOwn(value, key)) return false;
  return true;
}

/** The record stored under `key`, wherever its bucket is. */
export function recordIn<T>(buckets: Buckets<T>, key: string): T | undefined {
  return recordAt(buckets, key, placeOf(key));
}

/** The record stored under `key`, its hash `h` (`placeOf(key)`). */
export function recordAt<T>(buckets: Buckets<T>, key: string, h: number): T | undefined {
  let node = slotOf(slotOf(buckets, h & 15), (h >>> 4) & 15);
  for (let shift = 8; isBranch(node); shift += 4) node = node[(h >>> shift) & 15];
  return inLeaf(node, key);
}

/** A branch: 16 buckets (a leaf's pairs start with a key, a branch's with a bucket). */
function isBranch<T>(node: BucketNode<T> | undefined): node is readonly BucketNode<T>[] {
  return Array.isArray(node) && node.length > 0 && typeof node[0] !== "string";
}

/** The record under `key` in a leaf (pairs, or an older snapshot's object). */
function inLeaf<T>(leaf: BucketNode<T> | undefined, key: string): T | undefined {
  if (!Array.isArray(leaf)) {
    if (leaf !== undefined && (typeof leaf !== "object" || leaf === null)) notBuckets(leaf);
    return own(leaf as Readonly<Record<string, T>> | undefined, key);
  }
  const pairs = leaf as Pairs<T>;
  const end = pairsEnd(pairs);
  for (let i = 0; i < end; i += 2) if (pairs[i] === key) return pairs[i + 1] as T;
  assertKeys(pairs, end);
  return undefined;
}

/**
 * On a miss: a key that is not text (a hand-edited snapshot: set to null, or a pair cut out and the
 * rest shifted) may hide the record looked for, and a spent budget would read as room (found by a
 * tamper drill). Asked on a miss only: a found key is its own record whatever else the leaf holds.
 */
function assertKeys(pairs: Pairs<unknown>, end: number): void {
  for (let i = 0; i < end; i += 2) {
    const k = pairs[i];
    if (typeof k !== "string") throw new TypeError(`a leaf of the snapshot holds ${k === null ? "null" : typeof k} where a key goes, not records`);
  }
}

/**
 * A leaf's bound: a time before which none of its records expires (what `Tidy.expiry` says, the
 * least of them or less), kept as the last element of a leaf this version writes (an odd length),
 * so that a change or a sweep passes a leaf with nothing expired without reading its records (the
 * sweep read every record of one more leaf per change: ~10 % of `evaluate` at 1 000 credentials,
 * issue 10). −Infinity for a leaf without one (written before, or an object): its records are read.
 */
export function boundOf<T>(leaf: BucketNode<T> | undefined): number {
  if (!Array.isArray(leaf) || (leaf.length & 1) === 0) return -Infinity;
  const bound: unknown = leaf[leaf.length - 1];
  return typeof bound === "number" ? bound : -Infinity;
}

/** Where a leaf's pairs end: before its bound, when it has one. */
function pairsEnd(pairs: Pairs<unknown>): number {
  return pairs.length - (pairs.length & 1);
}

/** Whether `tidy` passes a leaf's records on unread: none expires by its time (the leaf's `bound`), and it does not read every record. */
function passesUnread<T>(tidy: Tidy<T>, bound: number): boolean {
  return tidy.exhaustive !== true && tidy.by < bound;
}

/** A leaf's records as pairs (a leaf of an older snapshot is an object: key → record). */
function pairsOf<T>(leaf: BucketNode<T> | undefined): Pairs<T> {
  if (Array.isArray(leaf)) return leaf as Pairs<T>;
  if (leaf === undefined || leaf === NO_RECORDS) return NO_PAIRS;
  const pairs: (string | T)[] = [];
  eachInLeaf(leaf, (key, record: T) => pairs.push(key, record));
  return pairs;
}

/** Calls `visit` with each record of a leaf (pairs, or an older snapshot's object), in order. */
function eachInLeaf<T>(leaf: BucketNode<T> | undefined, visit: (key: string, record: T) => void): void {
  if (Array.isArray(leaf)) {
    const pairs = leaf as Pairs<T>;
    const end = pairsEnd(pairs);
    for (let i = 0; i < end; i += 2) visit(pairs[i] as string, pairs[i + 1] as T);
  } else if (leaf !== undefined) {
    const records = leaf as Readonly<Record<string, T>>;
    for (const key in records) if (Object.hasOwn(records, key)) visit(key, records[key]!);
  }
}

/**
 * `level` with slot `i` set to `value` (emptied when undefined): a new frozen array of 16 (see
 * {@link copyLevel}); the same level when nothing changes, undefined when it ends up empty.
 */
function withSlot<X>(level: Level<X> | undefined, i: number, value: X | undefined): readonly X[] | undefined {
  if (slotOf(level, i) === value) return level as readonly X[] | undefined;
  const next = copyLevel(level);
  next[i] = value ?? (NO_RECORDS as X);
  // emptied: the level goes too when no slot holds anything
  if (value === undefined || isEmpty(value)) {
    let used = false;
    for (let j = 0; j < 16 && !used; j++) used = !isEmpty(next[j]);
    if (!used) return undefined;
  }
  return Object.freeze(next);
}

/**
 * A level's (or a branch's) 16 slots as a new array, an empty slot as an empty object. An array is
 * copied by a spread: V8 (Node 20) reads a frozen array's elements one by one at ~3.6 ns each (16
 * slots ~57 ns), and copies it whole by a spread in ~13 ns; a frozen array's `slice`, `concat` and a
 * frozen object's spread take its slow path (0.14–2 µs; measured with scratch scripts, issue 10).
 */
function copyLevel<X>(level: Level<X> | undefined): X[] {
  if (Array.isArray(level) && level.length === 16) {
    const copy = [...(level as readonly X[])];
    for (let j = 0; j < 16; j++) if (copy[j] === undefined || copy[j] === null) copy[j] = NO_RECORDS as X;
    return copy;
  }
  const copy = new Array<X>(16);
  for (let j = 0; j < 16; j++) copy[j] = slotOf(level, j) ?? (NO_RECORDS as X);
  return copy;
}

/**
 * Replaces the bucket at (outer, inner) by what `change` makes of it, copying the two levels on its
 * way and nothing else: structural sharing, only new objects are frozen.
 */
export function replaceBucket<T>(buckets: Buckets<T>, outer: number, inner: number, change: (node: BucketNode<T> | undefined) => BucketNode<T> | undefined): Buckets<T> {
  const level = slotOf(buckets, outer);
  const node = slotOf(level, inner);
  return placed(buckets, outer, level, inner, node, change(node));
}

/** `buckets` with the bucket at (outer, inner), `node` in `level`, replaced by `next`. */
function placed<T>(buckets: Buckets<T>, outer: number, level: Level<BucketNode<T>> | undefined, inner: number, node: BucketNode<T> | undefined, next: BucketNode<T> | undefined): Buckets<T> {
  if (next === node) return buckets;
  return withSlot(buckets, outer, withSlot(level, inner, next === NO_RECORDS ? undefined : next)) ?? NO_RECORDS;
}

/** A frozen array of 16 nodes, copied (see {@link copyLevel}), with slot `i` replaced. */
function withBranch<T>(branch: readonly BucketNode<T>[], i: number, child: BucketNode<T>): readonly BucketNode<T>[] {
  const copy = copyLevel(branch);
  copy[i] = child;
  return Object.freeze(copy);
}

/** Splits a leaf's pairs into 16 buckets by the 4 bits of their hash at `shift`, again where one is still too large. */
function split<T>(pairs: readonly (string | T)[], shift: number, bound: number): BucketNode<T> {
  const parts: (string | T)[][] = Array.from({ length: 16 }, () => []);
  for (let i = 0; i < pairs.length; i += 2) parts[(placeOf(pairs[i] as string) >>> shift) & 15]!.push(pairs[i]!, pairs[i + 1]!);
  // each part keeps the whole leaf's bound: a bound of all its records is one of any part of them
  return Object.freeze(parts.map((part) => (part.length === 0 ? NO_RECORDS : part.length > 2 * LEAF_MAX && shift < 28 ? split(part, shift + 4, bound) : frozenPairs(part, bound))));
}

/**
 * A leaf's pairs as the snapshot keeps them: an exact copy, frozen. An array filled by `push` keeps
 * the room it grew to (22 slots for 2 records), and freezing it keeps them all: every leaf a
 * snapshot holds would be ~3× its size, in the old generation once its snapshot lives on (at 100 000
 * credentials, each change promotes two leaves). A spread copies a packed array into exact room.
 * The leaf's bound ({@link boundOf}) goes last when it is a finite time (a snapshot is JSON).
 */
function frozenPairs<T>(pairs: (string | T | number)[], bound: number): Pairs<T> {
  // pushed, then copied whole: a spread of one array takes V8's fast copy, `[...pairs, bound]` does not
  if (Number.isFinite(bound)) pairs.push(bound);
  return Object.freeze([...pairs]);
}

/** One record's change: `key`'s record replaced by what `change` makes of it (removed when undefined). */
export interface Edit<T> {
  readonly key: string;
  readonly change: (record: T | undefined) => T | undefined;
}
const NO_EDITS: readonly [] = [];

/**
 * A leaf's records, each passed through `tidy`, as pairs, with the records of `edits` (distinct keys,
 * one leaf) replaced by what their changes make of them, in their order after the others; one pass.
 */
function rebuildLeaf<T>(leaf: BucketNode<T> | undefined, shift: number, tidy: Tidy<T>, edits: readonly Edit<T>[] = NO_EDITS): BucketNode<T> {
  const out: (string | T)[] = [];
  let found: (T | undefined)[] | undefined;
  // walked in a loop, not by a closure made per leaf: an older snapshot's object leaf as pairs first
  const pairs = Array.isArray(leaf) ? (leaf as Pairs<T>) : pairsOf(leaf);
  const end = pairsEnd(pairs);
  // nothing in the leaf expires by tidy's time: its records pass as they are, unread, and the new
  // bound is the old one or an edited record's expiry; otherwise each is kept by tidy, and the
  // bound is the least expiry of what is kept
  const bound = boundOf(pairs);
  const unexpired = passesUnread(tidy, bound);
  let least = unexpired ? bound : Infinity;
  for (let i = 0; i < end; i += 2) {
    const k = pairs[i] as string;
    const record = pairs[i + 1] as T;
    const j = editOf(edits, k);
    if (j >= 0) (found ??= [])[j] ??= record;
    else if (unexpired) out.push(k, record);
    else {
      const kept = tidy.keep(record);
      if (kept !== undefined) {
        out.push(k, kept);
        least = Math.min(least, tidy.expiry(kept));
      }
    }
  }
  for (let j = 0; j < edits.length; j++) {
    const value = edits[j]!.change(found?.[j]);
    if (value !== undefined) {
      out.push(edits[j]!.key, value);
      least = Math.min(least, tidy.expiry(value));
    }
  }
  if (out.length === 0) return NO_RECORDS;
  return out.length > 2 * LEAF_MAX && shift < 32 ? split(out, shift, least) : frozenPairs(out, least);
}

/** The index of `key`'s edit, -1 when none edits it. */
function editOf<T>(edits: readonly Edit<T>[], key: string): number {
  for (let j = 0; j < edits.length; j++) if (edits[j]!.key === key) return j;
  return -1;
}

/** `node` with the records of `edits` (keys of one hash `h`) changed in their leaf (see {@link rebuildLeaf}), copying the branches on the way. */
function changeNode<T>(node: BucketNode<T> | undefined, h: number, shift: number, edits: readonly Edit<T>[], tidy: Tidy<T>): BucketNode<T> | undefined {
  if (!isBranch(node)) return rebuildLeaf(node, shift, tidy, edits);
  const i = (h >>> shift) & 15;
  const child = changeNode(node[i], h, shift + 4, edits, tidy);
  if (child === node[i]) return node;
  return withBranch(node, i, child ?? NO_RECORDS);
}

/**
 * Sets (or, with `change` returning undefined, removes) the record under `key` and passes every
 * other record of its leaf through `tidy` (forgetting what has expired): bounded work per change.
 */
export function changeIn<T>(buckets: Buckets<T>, key: string, change: (record: T | undefined) => T | undefined, tidy: Tidy<T>): Buckets<T> {
  const h = placeOf(key);
  const outer = h & 15;
  const inner = (h >>> 4) & 15;
  const level = slotOf(buckets, outer);
  const node = slotOf(level, inner);
  return placed(buckets, outer, level, inner, node, changeNode(node, h, 8, [{ key, change }], tidy));
}

/**
 * The changes of one commit to the buckets of one kind (its writes and its sweep), gathered on one
 * copy of each level on their way: the top level is copied once, each level below it once however
 * many writes reach it, and those copies are written in place until {@link BucketsDraft.done}
 * freezes them. A level kept from `base` is never written: structural sharing, as
 * {@link replaceBucket} does one change at a time.
 */
export class BucketsDraft<T> {
  private root: Level<BucketNode<T>>[] | undefined;
  /** The levels below the top copied by this draft (a handful: one per write at most). */
  private readonly copies: BucketNode<T>[][] = [];
  private emptied = false;

  constructor(private readonly base: Buckets<T>) {}

  /** Replaces the bucket at (outer, inner) by what `change` makes of it (emptied when undefined). */
  update(outer: number, inner: number, change: (node: BucketNode<T> | undefined) => BucketNode<T> | undefined): void {
    const level = slotOf(this.root ?? this.base, outer);
    const node = slotOf(level, inner);
    this.place(outer, inner, level, node, change(node));
  }

  /** Sets (or, with `change` returning undefined, removes) `key`'s record, its hash `h`, as {@link changeIn} does. */
  change(key: string, h: number, change: (record: T | undefined) => T | undefined, tidy: Tidy<T>): void {
    this.changeAll([{ key, change }], h, tidy);
  }

  /**
   * The records of `edits` (distinct keys, all placed by the hash `h`: a credential's budget
   * windows) changed in one rebuild of their leaf: as one {@link change} after another, where no
   * record written by an edit is already forgotten by `tidy`.
   */
  changeAll(edits: readonly Edit<T>[], h: number, tidy: Tidy<T>): void {
    const outer = h & 15;
    const inner = (h >>> 4) & 15;
    const level = slotOf(this.root ?? this.base, outer);
    const node = slotOf(level, inner);
    this.place(outer, inner, level, node, changeNode(node, h, 8, edits, tidy));
  }

  /** Puts `next` in place of `node`, slot `inner` of `level`, slot `outer` of the top: copying each level once. */
  private place(outer: number, inner: number, level: Level<BucketNode<T>> | undefined, node: BucketNode<T> | undefined, next: BucketNode<T> | undefined): void {
    if (next === node) return;
    const root = (this.root ??= copyLevel(this.base));
    let copy = level as BucketNode<T>[] | undefined;
    if (copy === undefined || !this.copies.includes(copy)) {
      copy = copyLevel(level);
      this.copies.push(copy);
      root[outer] = copy;
    }
    copy[inner] = next ?? NO_RECORDS;
    if (next === undefined || isEmpty(next)) this.emptied = true;
  }

  /** The buckets after every change, frozen: `base` itself when nothing changed, empty levels left out. */
  done(): Buckets<T> {
    const root = this.root;
    if (root === undefined) return this.base;
    for (const copy of this.copies) Object.freeze(copy);
    if (this.emptied) {
      // as replaceBucket leaves them: a level with no records is an empty slot, and so are buckets with none
      for (let j = 0; j < 16; j++) {
        const level = root[j] as BucketNode<T>[];
        if (this.copies.includes(level) && level.every(isEmpty)) root[j] = NO_RECORDS;
      }
      if (root.every(isEmpty)) return NO_RECORDS;
    }
    return Object.freeze(root);
  }
}

/** Every record below `node` through `tidy`: the same node when nothing changes, new objects only where something did. */
export function tidyNode<T>(node: BucketNode<T>, tidy: Tidy<T>, shift = 8): BucketNode<T> {
  if (isBranch(node)) {
    const branch = node;
    let next: BucketNode<T>[] | undefined;
    for (let i = 0; i < 16; i++) {
      const child = tidyNode(branch[i]!, tidy, shift + 4);
      if (child === branch[i]) continue;
      if (next === undefined) {
        next = copyLevel(branch);
      }
      next[i] = child;
    }
    return next === undefined ? node : Object.freeze(next);
  }
  // nothing in the leaf expires by tidy's time (its bound): passed without reading a record
  if (passesUnread(tidy, boundOf(node))) return node;
  const pairs = pairsOf(node);
  const end = pairsEnd(pairs);
  for (let i = 1; i < end; i += 2) if (tidy.keep(pairs[i] as T) !== pairs[i]) return rebuildLeaf(node, shift, tidy);
  return node;
}

/**
 * One leaf below `node` through `tidy`: at each split, the child `path`'s next 4 bits name (lowest
 * first), so that successive paths visit every leaf in turn; bounded work (one leaf of at most
 * {@link LEAF_MAX} records, in a snapshot written since buckets split) however large the snapshot.
 */
export function tidyPath<T>(node: BucketNode<T>, path: number, tidy: Tidy<T>, shift = 8): BucketNode<T> {
  if (!isBranch(node)) return tidyNode(node, tidy, shift);
  const branch = node;
  const i = path & 15;
  const child = tidyPath(branch[i]!, path >>> 4, tidy, shift + 4);
  return child === branch[i] ? node : withBranch(branch, i, child);
}

/** The members a daily cap counts on one day (for tests and inspection). */
export function capMembers(usage: Usage, key: string, day: number): readonly string[] {
  return own(recordIn(usageData(usage).caps, key)?.days, String(day))?.members ?? [];
}

/** Every record of a bucketed kind, for tests and inspection. */
export function recordsIn<T>(buckets: Buckets<T>): [string, T][] {
  const out: [string, T][] = [];
  const walk = (node: BucketNode<T>): void => {
    if (isBranch(node)) for (const child of node) walk(child);
    else eachInLeaf(node, (key, record: T) => out.push([key, record]));
  };
  for (let outer = 0; outer < 16; outer++) {
    const level = slotOf(buckets, outer);
    for (let inner = 0; inner < 16 && level !== undefined; inner++) {
      const node = slotOf(level, inner);
      if (node !== undefined) walk(node);
    }
  }
  return out;
}


const EMPTY = freeze({ seq: 0, windows: {}, caps: {}, keys: {}, layout: LAYOUT }, true) as UsageData as unknown as Usage;

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

