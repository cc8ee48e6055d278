/**
 * What a change keeps of the records it passes (src/prune.ts): `tidyCap` keeps a daily cap's days
 * that have not ended and forgets the cap with the last of them; a record with no ended day is
 * handed back as it is (nothing copied), so the sweep costs nothing where nothing ended.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { defineConfig, emptyUsage, evaluate, prune } from "../src/index.js";
import { tidyCap, tidyKey, tidyWindow } from "../src/prune.js";
import { boundOf, recordsIn, usageData, type BucketNode, type CapDay, type CapRecord, type SnapshotWindow } from "../src/snapshot.js";
import { CAP_KEEP_MS, type KeyRecord } from "../src/store.js";

/** The rule, written out plainly: the days not ended by `now` (tidyCap is asked CAP_KEEP_MS later: a day is kept that long past its end); none left, the record goes. */
function expected(record: CapRecord, now: number): CapRecord | undefined {
  const days = Object.fromEntries(Object.entries(record.days).filter(([, d]) => now < d.resetAt));
  return Object.keys(days).length === 0 ? undefined : { ...record, days };
}

describe("tidyCap (DESIGN §7: a daily cap keeps the days that have not ended)", () => {
  it("keeps exactly the days not ended, forgets the record with the last of them, and hands back the same object when no day ended (property)", () => {
    const day: fc.Arbitrary<CapDay> = fc.record({ resetAt: fc.integer({ min: 0, max: 10 }), members: fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }) });
    const record: fc.Arbitrary<CapRecord> = fc.record({ latest: fc.nat(5), days: fc.dictionary(fc.integer({ min: 0, max: 5 }).map(String), day, { maxKeys: 4 }) });
    fc.assert(
      fc.property(record, fc.integer({ min: 0, max: 11 }), (r, now) => {
        const kept = tidyCap(now + CAP_KEEP_MS).keep(r);
        expect(kept).toEqual(expected(r, now));
        // within the week after a day's end, nothing is forgotten: a clock stepped back across midnight still finds its count (found by a clock drill)
        if (Object.values(r.days).every((d) => now < d.resetAt + CAP_KEEP_MS)) expect(tidyCap(now).keep(r)).toBe(Object.keys(r.days).length > 0 ? r : undefined);
        const nothingEnded = Object.values(r.days).every((d) => now < d.resetAt) && Object.keys(r.days).length > 0;
        if (nothingEnded) expect(kept).toBe(r);
        if (kept !== undefined && kept !== r) expect(Object.isFrozen(kept) && Object.isFrozen(kept.days)).toBe(true);
      }),
      { seed: 20_261_123, numRuns: 1_000 },
    );
  });

  it("a day without a readable end (a hand-edited stored snapshot: NaN, missing) counts as ended, as before the look-first change", () => {
    const broken = { latest: 1, days: { "1": { resetAt: Number.NaN, members: ["m1"] }, "2": { resetAt: 100, members: ["m2"] } } } as CapRecord;
    expect(tidyCap(50).keep(broken)).toEqual({ latest: 1, days: { "2": { resetAt: 100, members: ["m2"] } } });
    expect(tidyCap(50).keep({ latest: 1, days: { "1": { members: [] } } } as unknown as CapRecord)).toBeUndefined();
  });
});

describe("a leaf's bound (snapshot.ts boundOf): a change or a sweep passes a leaf before it unread", () => {
  it("prune forgets every expired record even when a host edited the bounds of a stored snapshot (a bound of 8.64e15 kept them; found by a review)", () => {
    const config = defineConfig({ docsUrl: "https://example.com/errors" });
    const t0 = Date.UTC(2026, 10, 27, 9);
    let usage = emptyUsage();
    for (let i = 0; i < 40; i++) {
      const credential = { id: `key_${i}`, kind: "api_key" as const, newsletters: { nl_1: { audience: "read" as const, sending: "write" as const } } };
      usage = evaluate({ method: "GET", path: "/newsletters/nl_1/subscribers" }, { credential, roles: { nl_1: "owner" }, usage, now: t0 + i, config }).usage;
      usage = evaluate({ method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: `k${i}` }, { credential, roles: { nl_1: "owner" }, usage, now: t0 + i, config }).usage;
    }
    // every leaf's bound set far ahead, through JSON as a host stores snapshots
    const edited = JSON.parse(JSON.stringify(usage), (_key, value: unknown) => (Array.isArray(value) && value.length % 2 === 1 && typeof value[0] === "string" ? [...value.slice(0, -1), 8.64e15] : value));
    const data = usageData(edited);
    expect(recordsIn(data.windows).length + recordsIn(data.keys).length + recordsIn(data.caps).length).toBeGreaterThan(0);
    const pruned = usageData(prune(edited, t0 + 3 * 86_400_000 + CAP_KEEP_MS));
    expect([recordsIn(pruned.windows), recordsIn(pruned.keys), recordsIn(pruned.caps)]).toEqual([[], [], []]);
  });

  it("each kind's tidy keeps a record as it is while its time is before the record's expiry, whatever the record (hand-edited ones too)", () => {
    const time = fc.oneof(fc.integer({ min: 0, max: 12 }), fc.constantFrom(Number.NaN, Infinity, -Infinity, "7" as unknown as number, undefined as unknown as number, null as unknown as number));
    const window = fc.record({ start: fc.integer({ min: 0, max: 10 }), count: fc.nat(3), expiresAt: time }, { requiredKeys: ["start", "count"] });
    const key = fc.record({ fingerprint: fc.constant("f"), expiresAt: time });
    const cap = fc.record({ latest: fc.nat(5), days: fc.dictionary(fc.integer({ min: 0, max: 5 }).map(String), fc.record({ resetAt: time, members: fc.constant(["m1"]) }), { maxKeys: 3 }) });
    const holds = <T>(tidy: (by: number) => { keep(r: T): T | undefined; expiry(r: T): number }, record: T, by: number) => {
      const t = tidy(by);
      if (by < t.expiry(record)) expect(t.keep(record)).toBe(record);
    };
    fc.assert(
      fc.property(window, key, cap, fc.integer({ min: -1, max: 13 }), (w, k, c, by) => {
        holds(tidyWindow, w as SnapshotWindow, by);
        holds(tidyKey, k as KeyRecord, by);
        holds(tidyCap, c as CapRecord, by);
      }),
      { seed: 20_261_127, numRuns: 2_000 },
    );
  });

  it("after changes, every leaf's bound is at most the least expiry of its records, and prune still forgets every expired record", () => {
    const config = defineConfig({ docsUrl: "https://example.com/errors", budgets: { general: { limit: 1000, window: 1 }, audience: { limit: 1000, window: 2 } } });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(300), fc.nat(700)), { minLength: 1, maxLength: 400 }), (steps) => {
        let usage = emptyUsage();
        let now = Date.UTC(2026, 10, 27, 9);
        for (const [who, ms] of steps) {
          now += ms;
          const credential = { id: `key_${who}`, kind: "api_key" as const, newsletters: { nl_1: { audience: "read" as const } } };
          usage = evaluate({ method: "GET", path: "/newsletters/nl_1/subscribers" }, { credential, roles: { nl_1: "owner" }, usage, now, config }).usage;
        }
        const leaves: (readonly unknown[])[] = [];
        const walk = (node: unknown): void => {
          if (!Array.isArray(node)) return void (typeof node === "object" && node !== null && Object.values(node).forEach(walk));
          if (node.length > 0 && typeof node[0] === "string") leaves.push(node);
          else node.forEach(walk);
        };
        walk(usageData(usage).windows);
        for (const leaf of leaves) {
          const least = Math.min(...leaf.filter((_, i) => i % 2 === 1 && i < leaf.length - (leaf.length & 1)).map((r) => (r as SnapshotWindow).expiresAt!));
          expect(boundOf(leaf as BucketNode<SnapshotWindow>)).toBeLessThanOrEqual(least);
        }
        expect(leaves.some((leaf) => Number.isFinite(boundOf(leaf as BucketNode<SnapshotWindow>))), "leaves carry bounds").toBe(true);
        const later = now + 2_000;
        expect(recordsIn(usageData(prune(usage, later)).windows)).toEqual([]);
      }),
      { seed: 20_261_127, numRuns: 40 },
    );
  });
});
