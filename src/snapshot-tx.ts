/**
 * The charge algorithm's transaction over a snapshot: reads the snapshot, records writes, and
 * commits them (with a little pruning) into the next immutable snapshot: the changed buckets are
 * built here (structural sharing, only new objects frozen) and immer's `produce` (the library's own
 * instance, immer.ts) hands back the new top-level snapshot.
 */
import { freeze } from "immer";
import { sealed } from "./immer.js";
import { checkedCap, checkedCapDay, checkedKey, checkedWindow, notASnapshot } from "./snapshot-check.js";
import { sweepSlot, tidyCap, tidyKey, tidyWindow } from "./prune.js";
import { BucketsDraft, inLayout, nextUsage, own, placeOf, recordIn, usageData, windowOf, type Buckets, type CapDay, type CapRecord, type SnapshotWindow, type Tidy, type Usage, type UsageData } from "./snapshot.js";
import type { BudgetCharge, CapCharge, CounterTx, KeyRecord, WindowRecord } from "./store.js";

type Kind = "windows" | "caps" | "keys";

/** What each kind keeps of a record by a time (prune.ts). */
const TIDY: Record<Kind, (now: number) => Tidy<any>> = { windows: tidyWindow, caps: tidyCap, keys: tidyKey };
interface Write {
  readonly kind: Kind;
  readonly key: string;
  /** placeOf(key): the bucket it goes in, hashed once for its read and its write */
  readonly hash: number;
  readonly change: (record: any) => unknown;
}

/** A write that stores a record whatever was there (a budget window, an idempotency record): one object, no closure. */
class Put implements Write {
  constructor(
    readonly kind: Kind,
    readonly key: string,
    readonly hash: number,
    private readonly record: unknown,
  ) {}
  change(): unknown {
    return this.record;
  }
}

/** Whether the key of `writes[j]` is written by one of `writes[i..j)` already. */
function keyAmong(writes: readonly Write[], i: number, j: number): boolean {
  for (let k = i; k < j; k++) if (writes[k]!.key === writes[j]!.key) return true;
  return false;
}

/** Whether `writes` are budget windows of one place and distinct keys: one rebuild of one leaf. */
function oneWindowGroup(writes: readonly Write[]): boolean {
  const hash = writes[0]!.hash;
  for (let j = 0; j < writes.length; j++) {
    if (writes[j]!.kind !== "windows" || writes[j]!.hash !== hash || keyAmong(writes, 0, j)) return false;
  }
  return true;
}

/** One day of a cap record, checked as read. */
function capDay(record: CapRecord | undefined, day: number, key: string): CapDay | undefined {
  return checkedCapDay(own(record?.days, String(day)), key);
}

/** A cap record with `member` counted on the charge's day (a new record, frozen). */
function withMember(record: CapRecord | undefined, cap: CapCharge, member: string): CapRecord {
  const day = String(cap.day);
  const today = own(record?.days, day);
  const members = today === undefined ? [member] : [...today.members, member];
  return freeze({ latest: cap.day, days: { ...record?.days, [day]: { resetAt: cap.resetAt, members } } }, true);
}

/** Reads a snapshot and writes into the next one only when the charge writes something. */
export class SnapshotTx implements CounterTx {
  private readonly writes: Write[] = [];
  /** Whose budget windows were placed last, and where (see {@link placeOfWindow}). */
  private placedFor: string | undefined = undefined;
  private placed = 0;
  private seq: number;
  private readonly usage: UsageData;
  /** The last two windows read, newest first, by key: a charge reads each window before it writes it. */
  private readKey0: string | undefined = undefined;
  private readRecord0: WindowRecord | undefined = undefined;
  private readKey1: string | undefined = undefined;
  private readRecord1: WindowRecord | undefined = undefined;

  constructor(snapshot: Usage) {
    this.usage = usageData(snapshot);
    const { seq, at } = this.usage;
    // seq numbers cap charges and feeds derived ids; at bounds what a change forgets
    if (!Number.isSafeInteger(seq) || seq < 0 || (at !== undefined && !Number.isFinite(at))) throw notASnapshot("its seq is not a whole number ≥ 0, or its at not a time");
    this.seq = seq;
  }

  window(budget: BudgetCharge): WindowRecord | undefined {
    const key = budget.key;
    const record = checkedWindow(windowOf(this.usage, key, this.placeOfWindow(budget)), key);
    this.readKey1 = this.readKey0;
    this.readRecord1 = this.readRecord0;
    this.readKey0 = key;
    this.readRecord0 = record;
    return record;
  }
  setWindow(budget: BudgetCharge, start: number, count: number, expiresAt: number): void {
    // the other window kept beside it stays: the one the charge has just read (it read the window first)
    const key = budget.key;
    const other = key === this.readKey0 ? this.readRecord0?.other : key === this.readKey1 ? this.readRecord1?.other : this.window(budget)?.other;
    const stored: SnapshotWindow = Object.freeze(other === undefined ? { start, count, expiresAt } : { start, count, expiresAt, other });
    this.writes.push(new Put("windows", key, this.placeOfWindow(budget), stored));
  }
  setWindowPair(budget: BudgetCharge, start: number, count: number, expiresAt: number, otherStart: number, otherCount: number, otherEnd: number): void {
    const key = budget.key;
    const stored: SnapshotWindow = Object.freeze(otherCount > 0 ? { start, count, expiresAt, other: Object.freeze({ start: otherStart, count: otherCount, expiresAt: otherEnd }) } : { start, count, expiresAt });
    this.writes.push(new Put("windows", key, this.placeOfWindow(budget), stored));
  }
  capCount(cap: CapCharge): number {
    return capDay(checkedCap(recordIn(this.usage.caps, cap.key), cap.key), cap.day, cap.key)?.members.length ?? 0;
  }
  addCapMember(cap: CapCharge, member: string): void {
    this.writes.push({ kind: "caps", key: cap.key, hash: placeOf(cap.key), change: (record: CapRecord | undefined) => withMember(record, cap, member) });
  }
  removeCapMember(key: string, day: number, member: string): boolean {
    const record = checkedCap(recordIn(this.usage.caps, key), key);
    if (record === undefined) return false;
    const members = capDay(record, day, key)?.members;
    if (members === undefined || !members.includes(member)) return false;
    this.writes.push({
      kind: "caps",
      key,
      hash: placeOf(key),
      change: (current: CapRecord) => {
        const today = current.days[String(day)]!;
        return freeze({ ...current, days: { ...current.days, [String(day)]: { ...today, members: members.filter((m) => m !== member) } } }, true);
      },
    });
    return true;
  }
  keyRecord(key: string): KeyRecord | undefined {
    return checkedKey(recordIn(this.usage.keys, key), key);
  }
  setKeyRecord(key: string, record: KeyRecord): void {
    this.writes.push(new Put("keys", key, placeOf(key), freeze({ ...record }, true)));
  }
  nextMember(): string {
    return `m${++this.seq}`;
  }

  /**
   * placeOf(budget.key), remembered for the last subject placed: a budget window is placed by its
   * key up to its subject (snapshot.ts), so a credential's windows, read and then written, share
   * one hash (hashing a key cost about as much as finding its record in a small snapshot). A
   * charge built without its subject is remembered by its key.
   */
  private placeOfWindow(budget: BudgetCharge): number {
    const whose = budget.subject ?? budget.key;
    if (whose === this.placedFor) return this.placed;
    this.placedFor = whose;
    this.placed = placeOf(budget.key);
    return this.placed;
  }

  /**
   * The next snapshot: the same object when nothing was written. A change also forgets what has
   * expired in the leaf it writes and in one more leaf of each kind it writes (the 256 buckets in
   * turn, by `seq`): bounded work per call, by the clock both this call and the previous change
   * agree has passed.
   */
  commit(now: number): Usage {
    // nothing written: the same snapshot, frozen through when it was restored from JSON (as every snapshot handed back is)
    if (this.writes.length === 0) return sealed(this.usage) as unknown as Usage;
    const seq = this.seq + 1;
    // a snapshot written before is placed anew first (once): the writes are placed by placeOf
    const base = inLayout(this.usage);
    const settled = base.at === undefined ? now : Math.min(now, base.at);
    if (oneWindowGroup(this.writes)) {
      // the change of most decisions: one credential's budget windows, one leaf
      const tidy = tidyWindow(settled);
      const draft = new BucketsDraft<any>(base.windows);
      draft.changeAll(this.writes, this.writes[0]!.hash, tidy);
      sweepSlot(draft, seq, tidy);
      return nextUsage(base, seq, now, draft.done(), base.caps, base.keys);
    }
    // one draft per kind written, by that kind's rule at the settled clock (a read writes windows only)
    const drafts: Partial<Record<Kind, { draft: BucketsDraft<any>; tidy: Tidy<any> }>> = {};
    const writes = this.writes;
    for (let i = 0, j = 1; i < writes.length; i = j, j = i + 1) {
      const { kind, hash } = writes[i]!;
      // a credential's budget windows (one hash, distinct keys) are written in one rebuild of their leaf
      while (j < writes.length && writes[j]!.kind === kind && writes[j]!.hash === hash && !keyAmong(writes, i, j)) j++;
      const d = (drafts[kind] ??= { draft: new BucketsDraft<any>(base[kind] as Buckets<any>), tidy: TIDY[kind](settled) });
      d.draft.changeAll(i === 0 && j === writes.length ? writes : writes.slice(i, j), hash, d.tidy);
    }
    const done = (kind: Kind): Buckets<any> => {
      const d = drafts[kind];
      if (d === undefined) return base[kind];
      sweepSlot(d.draft, seq, d.tidy);
      return d.draft.done();
    };
    // immer hands back the new top level, built whole and frozen (immer.ts: then it walks nothing)
    return nextUsage(base, seq, now, done("windows"), done("caps"), done("keys"));
  }
}
