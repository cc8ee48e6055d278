/**
 * The charge algorithm's transaction over a snapshot: reads the snapshot, records writes, and
 * commits them (with a little pruning) into the next immutable snapshot: the changed buckets are
 * built here (structural sharing, only new objects frozen) and immer's `produce` (the library's own
 * instance, immer.ts) hands back the new top-level snapshot.
 */
import { freeze } from "immer";
import { ticketDayCounts } from "./charge.js";
import { sweepSlot, tidyCap, tidyKey, tidyWindow } from "./prune.js";
import { capMembers, changeIn, nextUsage, own, recordIn, usageData, type Buckets, type CapRecord, type SnapshotWindow, type Tidy, type Usage, type UsageData } from "./snapshot.js";
import type { BudgetCharge, CapCharge, CounterTx, KeyRecord, WindowRecord } from "./store.js";

type Kind = "windows" | "caps" | "keys";

/** What each kind keeps of a record by a time (prune.ts). */
const TIDY: Record<Kind, (now: number) => Tidy<any>> = { windows: tidyWindow, caps: tidyCap, keys: tidyKey };
interface Write {
  readonly kind: Kind;
  readonly key: string;
  readonly change: (record: any) => unknown;
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
  private seq: number;
  private readonly usage: UsageData;

  constructor(snapshot: Usage) {
    this.usage = usageData(snapshot);
    this.seq = this.usage.seq;
  }

  window(budget: BudgetCharge): WindowRecord | undefined {
    return recordIn(this.usage.windows, budget.key);
  }
  setWindow(budget: BudgetCharge, record: WindowRecord): void {
    const stored: SnapshotWindow = Object.freeze({ start: record.start, count: record.count, expiresAt: record.start + budget.windowMs });
    this.writes.push({ kind: "windows", key: budget.key, change: () => stored });
  }
  capCount(cap: CapCharge): number {
    return capMembers(this.usage as unknown as Usage, cap.key, cap.day).length;
  }
  addCapMember(cap: CapCharge, member: string): void {
    this.writes.push({ kind: "caps", key: cap.key, change: (record: CapRecord | undefined) => withMember(record, cap, member) });
  }
  removeCapMember(key: string, day: number, member: string): boolean {
    const record = recordIn(this.usage.caps, key);
    if (record === undefined) return false;
    const latest = own(record.days, String(record.latest)) === undefined ? undefined : record.latest;
    if (!ticketDayCounts(day, latest)) return false;
    const members = own(record.days, String(day))?.members;
    if (members === undefined || !members.includes(member)) return false;
    this.writes.push({
      kind: "caps",
      key,
      change: (current: CapRecord) => {
        const today = current.days[String(day)]!;
        return freeze({ ...current, days: { ...current.days, [String(day)]: { ...today, members: members.filter((m) => m !== member) } } }, true);
      },
    });
    return true;
  }
  keyRecord(key: string): KeyRecord | undefined {
    return recordIn(this.usage.keys, key);
  }
  setKeyRecord(key: string, record: KeyRecord): void {
    const stored = freeze({ ...record }, true);
    this.writes.push({ kind: "keys", key, change: () => stored });
  }
  nextMember(): string {
    return `m${++this.seq}`;
  }

  /**
   * The next snapshot: the same object when nothing was written. A change also forgets what has
   * expired in the leaf it writes and in one more leaf of each kind it writes (the 256 buckets in
   * turn, by `seq`): bounded work per call, by the clock both this call and the previous change
   * agree has passed.
   */
  commit(now: number): Usage {
    if (this.writes.length === 0) return this.usage as unknown as Usage;
    const seq = this.seq + 1;
    const settled = this.usage.at === undefined ? now : Math.min(now, this.usage.at);
    // the rule of each kind written, by the settled clock (a read writes windows only: one rule, not three)
    const tidy: Partial<Record<Kind, Tidy<any>>> = {};
    const next: Partial<Record<Kind, Buckets<any>>> = {};
    for (const { kind, key, change } of this.writes) {
      const rule = (tidy[kind] ??= TIDY[kind](settled));
      next[kind] = changeIn(next[kind] ?? this.usage[kind], key, change, rule);
    }
    for (const kind of Object.keys(next) as Kind[]) next[kind] = sweepSlot(next[kind]!, seq, tidy[kind]!);
    // immer hands back the new top level, built whole and frozen (immer.ts: then it walks nothing)
    const base = this.usage;
    return nextUsage(base, seq, now, next.windows ?? base.windows, next.caps ?? base.caps, next.keys ?? base.keys);
  }
}
