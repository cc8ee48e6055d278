/**
 * The charge algorithm's transaction over a snapshot: reads the snapshot, records writes, and
 * commits them (with a little pruning) into the next immutable snapshot in one immer `produce`.
 */
import { produce } from "immer";
import { ticketDayCounts } from "./charge.js";
import { pruneBucket, pruneCapBucket, windowExpired } from "./prune.js";
import { capMembers, own, recordIn, usageData, writeIn, type CapRecord, type SnapshotWindow, type Usage, type UsageData } from "./snapshot.js";
import type { CapCharge, CounterTx, KeyRecord, WindowRecord } from "./store.js";

/** Reads a snapshot and writes into a draft only when the charge writes something. */
export class SnapshotTx implements CounterTx {
  private readonly writes: Array<(draft: { -readonly [K in keyof UsageData]: any }) => void> = [];
  private seq: number;
  private readonly usage: UsageData;
  /** Which kinds this change writes: only those are pruned, so a change leaves every other kind the same object. */
  private wrote = { windows: false, caps: false, keys: false };

  constructor(snapshot: Usage) {
    this.usage = usageData(snapshot);
    this.seq = this.usage.seq;
  }

  window(key: string): WindowRecord | undefined {
    return recordIn(this.usage.windows, key);
  }
  setWindow(key: string, record: WindowRecord, windowMs: number): void {
    const stored: SnapshotWindow = { start: record.start, count: record.count, expiresAt: record.start + windowMs };
    this.wrote.windows = true;
    this.writes.push((d) => writeIn(d.windows, key, stored));
  }
  capCount(cap: CapCharge): number {
    return capMembers(this.usage as unknown as Usage, cap.key, cap.day).length;
  }
  addCapMember(cap: CapCharge, member: string): void {
    const day = String(cap.day);
    this.wrote.caps = true;
    this.writes.push((d) => {
      const record = recordIn<CapRecord>(d.caps, cap.key) as { latest: number; days: Record<string, { resetAt: number; members: string[] }> } | undefined;
      if (record === undefined) {
        writeIn<CapRecord>(d.caps, cap.key, { latest: cap.day, days: { [day]: { resetAt: cap.resetAt, members: [member] } } });
        return;
      }
      record.latest = cap.day;
      const today = own(record.days, day);
      if (today === undefined) record.days[day] = { resetAt: cap.resetAt, members: [member] };
      else today.members.push(member);
    });
  }
  removeCapMember(key: string, day: number, member: string): boolean {
    const record = recordIn(this.usage.caps, key);
    if (record === undefined) return false;
    const latest = own(record.days, String(record.latest)) === undefined ? undefined : record.latest;
    if (!ticketDayCounts(day, latest)) return false;
    const members = own(record.days, String(day))?.members;
    if (members === undefined || !members.includes(member)) return false;
    this.wrote.caps = true;
    this.writes.push((d) => {
      (recordIn<CapRecord>(d.caps, key)!.days[String(day)] as { members: readonly string[] }).members = members.filter((m) => m !== member);
    });
    return true;
  }
  keyRecord(key: string): KeyRecord | undefined {
    return recordIn(this.usage.keys, key);
  }
  setKeyRecord(key: string, record: KeyRecord): void {
    this.wrote.keys = true;
    this.writes.push((d) => writeIn(d.keys, key, record));
  }
  nextMember(): string {
    return `m${++this.seq}`;
  }

  /**
   * The next snapshot: the same object when nothing was written. A change also forgets what has
   * expired in one bucket of each kind it writes (the 256 buckets in turn, by `seq`): bounded work
   * per call, by the clock both this call and the previous change agree has passed.
   */
  commit(now: number): Usage {
    if (this.writes.length === 0) return this.usage as unknown as Usage;
    const seq = this.seq + 1;
    const settled = this.usage.at === undefined ? now : Math.min(now, this.usage.at);
    // seq moves by 1, or by 2 when a cap member is numbered: this walks all 256 buckets either way
    const slot = ((seq >>> 1) + (seq & 1) * 128) & 255;
    const outer = String(slot & 15);
    const inner = String(slot >>> 4);
    const next = produce(this.usage, (draft) => {
      for (const write of this.writes) write(draft);
      draft.seq = seq;
      draft.at = now;
      const base = this.usage;
      if (this.wrote.windows) pruneBucket(draft.windows, base.windows, outer, inner, (r: SnapshotWindow) => windowExpired(r, settled));
      if (this.wrote.keys) pruneBucket(draft.keys, base.keys, outer, inner, (r: KeyRecord) => settled >= r.expiresAt);
      if (this.wrote.caps) pruneCapBucket(draft.caps, base.caps, outer, inner, settled);
    });
    return next as unknown as Usage;
  }
}
