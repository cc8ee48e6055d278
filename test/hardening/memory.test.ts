/**
 * Issue 8, defects 4 and 5: the pure snapshot's caps share structure and forget what has expired
 * (`prune`), and MemoryStore forgets expired entries a bounded number per call.
 */
import { describe, expect, it } from "vitest";
import { emptyUsage, evaluate, MemoryStore, prune, type Usage } from "../../src/index.js";
import { recordsIn, slotOf, usageData } from "../../src/snapshot.js";
import { CAP_KEEP_MS, type ChargeRequest } from "../../src/store.js";
import { SWEEP_ONCE_SPLIT, T0, key, post } from "../fixtures.js";

const DAY = 86_400_000;
const roles = { nl_1: "owner" };
const testSend = post("/articles/a/test-send", { newsletter: "nl_1", body: { to: ["a@x.io"] } });
const sender = (i: number) => key({ nl_1: { sending: "write" } }, false, `c${i}`);

/** `n` test sends by senders `from` … `from + n - 1`, one ms apart from `now`. */
function withTestSends(n: number, now: number, usage: Usage = emptyUsage(), from = 0): Usage {
  for (let i = 0; i < n; i++) usage = evaluate(testSend, { credential: sender(from + i), roles, usage, now: now + i }).usage;
  return usage;
}

describe("issue 8 defect 4: the pure snapshot's caps scale and forget what has expired", () => {
  it("pure snapshot caps do not scale: one test send copies one bucket of caps, not every credential's", () => {
    const before = withTestSends(1000, T0);
    const after = evaluate(testSend, { credential: sender(5000), roles, usage: before, now: T0 + 5000 }).usage;
    // two levels of at most 16 buckets, as windows and idempotency records
    expect(Object.keys(usageData(after).caps).length).toBeLessThanOrEqual(16);
    let changed = 0;
    const [was, now] = [usageData(before).caps, usageData(after).caps];
    for (let outer = 0; outer < 16; outer++) {
      for (let inner = 0; inner < 16; inner++) if (slotOf(slotOf(now, outer), inner) !== slotOf(slotOf(was, outer), inner)) changed++;
    }
    expect(changed).toBeLessThanOrEqual(1);
    expect(recordsIn(usageData(after).caps)).toHaveLength(1001);
  });

  it("prune forgets every expired record and returns the same object when nothing has expired", () => {
    let usage = withTestSends(300, T0);
    usage = evaluate(post("/articles/a/send", { newsletter: "nl_1", idempotencyKey: "k1" }), { credential: sender(1), roles, usage, now: T0 + 1000 }).usage;
    expect(prune(usage, T0 + 2000)).toBe(usage);
    expect(recordsIn(usageData(usage).caps).length).toBeGreaterThan(0);
    // two days on, the windows and keys are gone; a cap's day is kept a week past its end (a clock
    // stepped back across midnight must still find its count: found by a clock drill)
    const days = prune(usage, T0 + 2 * DAY);
    expect(recordsIn(usageData(days).windows)).toHaveLength(0);
    expect(recordsIn(usageData(days).keys)).toHaveLength(0);
    expect(recordsIn(usageData(days).caps)).toHaveLength(recordsIn(usageData(usage).caps).length);
    const later = prune(usage, T0 + 2 * DAY + CAP_KEEP_MS);
    expect(recordsIn(usageData(later).windows)).toHaveLength(0);
    expect(recordsIn(usageData(later).caps)).toHaveLength(0);
    expect(recordsIn(usageData(later).keys)).toHaveLength(0);
    expect(prune(later, T0 + 2 * DAY + CAP_KEEP_MS)).toBe(later);
    // the budget windows end a minute later, the caps at midnight: an hour on, only the windows are gone
    const hour = prune(usage, T0 + 3600_000);
    expect(recordsIn(usageData(hour).windows)).toHaveLength(0);
    expect(recordsIn(usageData(hour).caps)).toHaveLength(recordsIn(usageData(usage).caps).length);
    expect(Object.isFrozen(later)).toBe(true);
  });

  it("evaluate forgets expired records as it goes, a leaf per change (the 256 buckets in turn, a split bucket's leaves one per visit), once two changes agree the time has passed", () => {
    let usage = withTestSends(2000, T0);
    const seen = recordsIn(usageData(usage).caps).length;
    // one request stamped two days ahead forgets nothing of today
    const ahead = evaluate(testSend, { credential: sender(9999), roles, usage, now: T0 + 2 * DAY }).usage;
    expect(recordsIn(usageData(ahead).caps).length).toBeGreaterThanOrEqual(seen);
    // changes two days on, by other senders (so that no change writes over yesterday's records),
    // reach every leaf (buckets here split once at most): every record left is live, yesterday's caps
    // and windows are gone
    const start = T0 + 2 * DAY + CAP_KEEP_MS + 10_000;
    const changes = SWEEP_ONCE_SPLIT;
    usage = withTestSends(changes, start, usage, 10_000);
    const end = start + changes;
    const deadCaps = recordsIn(usageData(usage).caps).filter(([, r]) => Object.values(r.days).some((d) => d.resetAt + CAP_KEEP_MS <= end));
    const deadWindows = recordsIn(usageData(usage).windows).filter(([, w]) => w.expiresAt !== undefined && w.expiresAt <= start);
    expect(deadCaps).toEqual([]);
    expect(deadWindows).toEqual([]);
    expect(recordsIn(usageData(usage).caps).length).toBeLessThanOrEqual(changes);
  });

  it("prune and the clock range: now out of range is a host error", () => {
    expect(() => prune(emptyUsage(), 1e22)).toThrow(/now/);
    expect(() => prune({} as Usage, T0)).toThrow(/usage/);
  });
});

function chargeOf(i: number, now: number): ChargeRequest {
  return { id: `r${i}`, now, budgets: [{ key: `b${i}`, limit: 10, windowMs: 60_000 }], refused: false };
}

describe("issue 8 defect 5: MemoryStore forgets expired entries incrementally", () => {
  it("MemoryStore's sweep pauses the process: no single charge forgets more than expirePerCall entries, and all expired ones are forgotten", () => {
    const store = new MemoryStore();
    for (let i = 0; i < 12_000; i++) store.charge(chargeOf(i, T0));
    expect(store.size).toBe(12_000);
    let now = T0 + 61_000;
    let largestDrop = 0;
    for (let i = 0; i < 12_000; i++) {
      const before = store.size;
      store.charge(chargeOf(100_000 + i, (now += 1)));
      largestDrop = Math.max(largestDrop, before + 1 - store.size);
    }
    expect(largestDrop).toBeLessThanOrEqual(64);
    // the memory bound holds: what expired is gone, what is open stays
    expect(store.size).toBe(12_000);
  });

  it("one charge stamped days ahead forgets nothing that is still open by the next call's clock", () => {
    const store = new MemoryStore({ expirePerCall: 1_000_000 });
    for (let i = 0; i < 100; i++) store.charge(chargeOf(i, T0));
    store.charge(chargeOf(1000, T0 + 3 * DAY));
    store.charge(chargeOf(1001, T0 + 1000));
    expect(store.size).toBe(102);
    expect(store.read([{ key: "b1", limit: 10, windowMs: 60_000 }], T0 + 2000)[0]!.count).toBe(1);
  });

  it("sweep forgets everything expired at once, as before", () => {
    const store = new MemoryStore();
    for (let i = 0; i < 500; i++) store.charge(chargeOf(i, T0));
    store.sweep(T0 + 61_000);
    expect(store.size).toBe(0);
  });
});
