/**
 * A commit's changes to one kind gathered on one copy of each level (BucketsDraft, snapshot.ts):
 * the buckets it hands back hold exactly what the same changes made one at a time by changeIn hold,
 * in the same shape (empty levels left out alike), deep-frozen, and the buckets it started from are
 * never written: a level copied by the draft is written in place until `done`, so a write that
 * reached a level kept from the snapshot before would change that snapshot.
 */
import fc from "fast-check";
import { freeze } from "immer";
import { describe, expect, it } from "vitest";
import { BucketsDraft, changeIn, keepAll, placeOf, recordIn, recordsIn, usageData, type Buckets, type Tidy } from "../src/snapshot.js";
import { emptyUsage } from "../src/index.js";
import { unfrozenPath } from "./fixtures.js";

type Rec = { readonly n: number };
const same: Tidy<Rec> = keepAll<Rec>(() => Infinity);
/** Forgets records whose n is odd: a tidy that changes the leaves it passes (at any time: their expiry is −Infinity). */
const dropOdd: Tidy<Rec> = { by: 0, keep: (r) => (r.n % 2 === 1 ? undefined : r), expiry: (r) => (r.n % 2 === 1 ? -Infinity : Infinity) };

/** A change: set key i (to n), or remove it (n undefined); keys as budget windows' are, four budgets a credential (placed together: placeOf). */
const changes = fc.array(fc.record({ key: fc.nat({ max: 300 }), n: fc.option(fc.nat({ max: 9 }), { nil: undefined }) }), { maxLength: 12 });

/** Budget `i & 3` of credential `i >>> 2`, spelt as store-keys.ts spells a budget window's key. */
const keyOf = (i: number): string => `b:${`k.${i >>> 2}`.length}.k.${i >>> 2}:${i & 3}`;

function build(count: number): Buckets<Rec> {
  let b = usageData(emptyUsage()).windows as unknown as Buckets<Rec>;
  for (let i = 0; i < count; i++) b = changeIn(b, keyOf(i), () => freeze({ n: i * 2 }), same);
  return b;
}

/** A deep copy, to see that nothing below `value` was written. */
const copy = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe("BucketsDraft (snapshot.ts): a commit's writes to one kind, one copy of each level", () => {
  it("holds what changeIn one change at a time holds, in the same shape, deep-frozen, its base unwritten", () => {
    fc.assert(
      // records before: none, a few, and 5 000 (more than 256 × LEAF_MAX: some buckets split)
      fc.property(fc.constantFrom(0, 1, 2, 40, 300, 5000), changes, fc.boolean(), (count, list, tidyOdd) => {
        const base = build(count);
        const before = copy(base);
        const tidy = tidyOdd ? dropOdd : same;
        const draft = new BucketsDraft(base);
        let want = base;
        for (const { key, n } of list) {
          const k = keyOf(key);
          const change = (): Rec | undefined => (n === undefined ? undefined : freeze({ n }));
          draft.change(k, placeOf(k), change, tidy);
          want = changeIn(want, k, change, tidy);
        }
        const got = draft.done();
        expect(copy(got)).toEqual(copy(want));
        expect(new Map(recordsIn(got).map(([k, r]) => [k, r.n]))).toEqual(new Map(recordsIn(want).map(([k, r]) => [k, r.n])));
        for (const { key } of list) expect(recordIn(got, keyOf(key))?.n).toBe(recordIn(want, keyOf(key))?.n);
        // against a plain model: what was there, then each change in turn; a tidy that forgets may
        // drop records of the leaves it passes, never keep a wrong value, never the last write
        const model = new Map(recordsIn(base).map(([k, r]) => [k, r.n]));
        for (const { key, n } of list) n === undefined ? model.delete(keyOf(key)) : model.set(keyOf(key), n);
        const records = new Map(recordsIn(got).map(([k, r]) => [k, r.n]));
        if (!tidyOdd) expect(records).toEqual(model);
        for (const [k, n] of records) expect(model.get(k), k).toBe(n);
        const last = list.at(-1);
        if (last !== undefined) expect(records.get(keyOf(last.key))).toBe(last.n);
        expect(unfrozenPath(got, "buckets")).toBeUndefined();
        expect(copy(base), "the base buckets were written").toEqual(before);
        if (list.length === 0) expect(got).toBe(base);
      }),
      { seed: 20_261_125, numRuns: 150 },
    );
  });

  it("changeAll: a credential's budgets (one hash, distinct keys) in one rebuild of their leaf hold what one change after another holds, in the same shape (property)", () => {
    const group = fc.record({ who: fc.nat({ max: 80 }), budgets: fc.uniqueArray(fc.nat({ max: 3 }), { minLength: 1, maxLength: 4 }), n: fc.option(fc.nat({ max: 9 }), { nil: undefined }) });
    fc.assert(
      fc.property(fc.constantFrom(0, 2, 300, 5000), fc.array(group, { maxLength: 6 }), (count, groups) => {
        const base = build(count);
        const batched = new BucketsDraft(base);
        const oneByOne = new BucketsDraft(base);
        const model = new Map(recordsIn(base).map(([k, r]) => [k, r.n]));
        for (const { who, budgets, n } of groups) {
          // each change adds to the record it is handed: a record handed to the wrong edit shows
          const edits = budgets.map((b) => ({ key: keyOf(who * 4 + b), change: (r: Rec | undefined): Rec | undefined => (n === undefined ? undefined : freeze({ n: (r?.n ?? 100 * b) + n })) }));
          batched.changeAll(edits, placeOf(edits[0]!.key), same);
          for (const e of edits) {
            oneByOne.change(e.key, placeOf(e.key), e.change, same);
            const next = e.change(model.has(e.key) ? { n: model.get(e.key)! } : undefined);
            next === undefined ? model.delete(e.key) : model.set(e.key, next.n);
          }
        }
        const got = batched.done();
        expect(copy(got)).toEqual(copy(oneByOne.done()));
        expect(new Map(recordsIn(got).map(([k, r]) => [k, r.n]))).toEqual(model);
        for (const [k, n] of model) expect(recordIn(got, k)?.n, k).toBe(n);
        expect(unfrozenPath(got, "buckets")).toBeUndefined();
      }),
      { seed: 20_261_125, numRuns: 100 },
    );
  });

  it("removing every record through one draft leaves empty buckets, as changeIn does", () => {
    const base = build(3);
    const draft = new BucketsDraft(base);
    for (let i = 0; i < 3; i++) draft.change(keyOf(i), placeOf(keyOf(i)), () => undefined, same);
    let want = base;
    for (let i = 0; i < 3; i++) want = changeIn(want, keyOf(i), () => undefined, same);
    expect(draft.done()).toEqual({});
    expect(want).toEqual({});
  });

  it("a bucket handed back unchanged copies nothing: the same buckets back (a sweep that forgets nothing)", () => {
    const base = build(40);
    const draft = new BucketsDraft(base);
    for (let slot = 0; slot < 256; slot++) draft.update(slot & 15, slot >>> 4, (node) => node);
    expect(draft.done()).toBe(base);
  });
});
