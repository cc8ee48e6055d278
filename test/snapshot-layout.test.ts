/**
 * The snapshot's layout 2 (snapshot.ts `placeOf`): a credential's budget windows are placed by the
 * credential's part of their key, so that they share a leaf. Snapshots written before (no `layout`:
 * every record placed by the hash of its whole key) are stored by hosts, so they must still be read
 * as they are — a window read from the wrong bucket is a count lost, over-admission — and placed
 * anew, all of them, by their first change.
 *
 * The old layout is written here as the snapshots before it were: objects keyed "0".."15", leaves as
 * objects, every key by fnv1a of the whole key, no `layout` field; and through JSON, as a host
 * restores it (nothing frozen).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { defineConfig, emptyUsage, evaluate, prune, reset, type Credential, type Decision, type PolicyRequest, type Usage } from "../src/index.js";
import { fnv1a } from "../src/hash.js";
import { inLayout, LAYOUT, nextUsage, placeOf, recordsIn, usageData, windowOf, type Buckets } from "../src/snapshot.js";
import { budgetKey, subjectOf } from "../src/store-keys.js";
import { T0, unfrozenPath } from "./fixtures.js";

const config = defineConfig({ docsUrl: "https://x.invalid/e", budgets: { general: { limit: 5, window: 60 }, audience: { limit: 3, window: 60 } } });
const roles = { nl_1: "owner" } as const;
const read: PolicyRequest = { method: "GET", path: "/newsletters/nl_1/subscribers" };
const credentials: Credential[] = Array.from({ length: 40 }, (_, i) => ({ id: `key_${i}`, kind: "api_key", newsletters: { nl_1: { audience: "read" } } }));

describe("DESIGN §2, §4: no change stamps the current layout over windows in the old places", () => {
  it("nextUsage refuses a base that was not placed anew (inLayout) first: its windows' reads would miss them and admit past the budgets", () => {
    const old = usageData(written_before(evaluate(read, { credential: credentials[0]!, roles, usage: emptyUsage(), now: T0, config }).usage));
    expect(() => nextUsage(old, old.seq + 1, T0, old.windows, old.caps, old.keys)).toThrow(/inLayout/);
    const placed = inLayout(old);
    expect(() => nextUsage(placed, placed.seq + 1, T0, placed.windows, placed.caps, placed.keys)).not.toThrow();
  });
});

/** A kind as the snapshots before layout 2 held it: every record by fnv1a of its whole key, in objects. */
function oldBuckets(buckets: Buckets<unknown>): Record<string, Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const [key, record] of recordsIn(buckets)) {
    const h = fnv1a(key);
    ((out[String(h & 15)] ??= {})[String((h >>> 4) & 15)] ??= {})[key] = record;
  }
  return out;
}

/** `usage` as a host would restore it from a store, written before layout 2. */
function written_before(usage: Usage): Usage {
  const { layout: _, ...data } = usageData(usage);
  const old = { ...data, windows: oldBuckets(data.windows), caps: oldBuckets(data.caps), keys: oldBuckets(data.keys) };
  return JSON.parse(JSON.stringify(old)) as Usage;
}

const windowsOf = (usage: Usage) => new Map(recordsIn(usageData(usage).windows).map(([k, r]) => [k, r.count]));
/** Every credential's windows as a charge finds them (where its layout places them), beside the snapshot's. */
function readsAlike(got: Usage, want: Usage): void {
  for (const c of credentials) {
    for (const budget of ["general", "audience"]) {
      const key = budgetKey(subjectOf(c), budget);
      expect(windowOf(usageData(got), key), key).toEqual(windowOf(usageData(want), key));
    }
  }
}
const comparable = (d: Decision) => ({ status: d.status, headers: d.headers, code: d.body?.error.code });

describe("DESIGN §2, §4 (a window read from the wrong bucket is over-admission): snapshot layout 2, a credential's budget windows share a leaf; snapshots written before are read as they are", () => {
  it("placeOf: a budget window's key by the credential's part of it (its budgets together), every other key by the whole key", () => {
    const subject = subjectOf(credentials[3]!);
    expect(placeOf(budgetKey(subject, "general"))).toBe(placeOf(budgetKey(subject, "audience")));
    expect(placeOf(budgetKey(subject, "general"))).toBe(fnv1a(`b:${subject.length}.${subject}`));
    expect(placeOf(budgetKey(subjectOf(credentials[4]!), "general"))).not.toBe(placeOf(budgetKey(subject, "general")));
    // a budget name with ":" in it stays with its credential's other budgets
    expect(placeOf(budgetKey(subject, "a:b"))).toBe(placeOf(budgetKey(subject, "general")));
    // a key not of the budget window's shape (or whose length does not fit) is hashed whole
    for (const key of ["k:3.k.x:idem", "t:3.k.x", "b:", "b:x", "bb:1:2", "b:3.k.xy:g", "b:9.k.x:g", "b:.k:g", "b:99999999999999.k:g", "b:2.k.x"]) expect(placeOf(key)).toBe(fnv1a(key));
    expect(usageData(emptyUsage()).layout).toBe(LAYOUT);
  });

  it("decides the same from a snapshot written before as from the same counts in layout 2, and its first change places it anew (property)", () => {
    const step = fc.record({ who: fc.nat({ max: 39 }), dt: fc.nat({ max: 20_000 }) });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), fc.array(step, { minLength: 1, maxLength: 40 }), (before, after) => {
        let usage = emptyUsage();
        let now = T0;
        for (const s of before) usage = evaluate(read, { credential: credentials[s.who]!, roles, usage, now: (now += s.dt), config }).usage;
        let old = written_before(usage);
        expect(usageData(old).layout).toBeUndefined();
        readsAlike(old, usage);
        for (const s of after) {
          const state = { credential: credentials[s.who]!, roles, now: (now += s.dt), config };
          const fresh = evaluate(read, { ...state, usage });
          const restored = evaluate(read, { ...state, usage: old });
          expect(comparable(restored.decision)).toEqual(comparable(fresh.decision));
          expect(windowsOf(restored.usage)).toEqual(windowsOf(fresh.usage));
          readsAlike(restored.usage, fresh.usage);
          if (restored.usage !== old) {
            expect(usageData(restored.usage).layout).toBe(LAYOUT);
            expect(unfrozenPath(restored.usage)).toBeUndefined();
          }
          [usage, old] = [fresh.usage, restored.usage];
        }
      }),
      { seed: 20_261_125, numRuns: 60 },
    );
  });

  it("prune and reset of a snapshot written before: the same counts as of layout 2; the host's object back when nothing changes", () => {
    let usage = emptyUsage();
    credentials.forEach((credential, i) => {
      for (let k = 0; k <= i % 4; k++) usage = evaluate(read, { credential, roles, usage, now: T0 + i * 1000, config }).usage;
    });
    const old = written_before(usage);
    expect(prune(old, T0)).toBe(old);
    const later = T0 + 60_000 + 20_500; // the first 20 credentials' windows have ended
    const pruned = prune(old, later);
    expect(windowsOf(pruned)).toEqual(windowsOf(prune(usage, later)));
    readsAlike(pruned, prune(usage, later));
    expect(usageData(pruned).layout).toBe(LAYOUT);
    expect(unfrozenPath(pruned)).toBeUndefined();
    const target = { credential: credentials[7]! };
    expect(windowsOf(reset(old, target, T0, config))).toEqual(windowsOf(reset(usage, target, T0, config)));
    readsAlike(reset(old, target, T0, config), reset(usage, target, T0, config));
    expect(windowsOf(reset(old, target, T0, config)).has(budgetKey(subjectOf(credentials[7]!), "general"))).toBe(false);
    const nobody = { credential: { id: "never_seen", kind: "api_key" as const } };
    expect(reset(old, nobody, T0, config)).toBe(old);
  });
});
