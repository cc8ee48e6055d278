/**
 * What a change keeps of the records it passes (src/prune.ts): `tidyCap` keeps a daily cap's days
 * that have not ended and forgets the cap with the last of them; a record with no ended day is
 * handed back as it is (nothing copied), so the sweep costs nothing where nothing ended.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { tidyCap } from "../src/prune.js";
import type { CapDay, CapRecord } from "../src/snapshot.js";

/** The rule, written out plainly: the days not ended by `now`; none left, the record goes. */
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
        const kept = tidyCap(now)(r);
        expect(kept).toEqual(expected(r, now));
        const nothingEnded = Object.values(r.days).every((d) => now < d.resetAt) && Object.keys(r.days).length > 0;
        if (nothingEnded) expect(kept).toBe(r);
        if (kept !== undefined && kept !== r) expect(Object.isFrozen(kept) && Object.isFrozen(kept.days)).toBe(true);
      }),
      { seed: 20_261_123, numRuns: 1_000 },
    );
  });

  it("a day without a readable end (a hand-edited stored snapshot: NaN, missing) counts as ended, as before the look-first change", () => {
    const broken = { latest: 1, days: { "1": { resetAt: Number.NaN, members: ["m1"] }, "2": { resetAt: 100, members: ["m2"] } } } as CapRecord;
    expect(tidyCap(50)(broken)).toEqual({ latest: 1, days: { "2": { resetAt: 100, members: ["m2"] } } });
    expect(tidyCap(50)({ latest: 1, days: { "1": { members: [] } } } as unknown as CapRecord)).toBeUndefined();
  });
});
