/**
 * The store conformance suite must fail a store that is wrong, also one wrong only at the spec's
 * sizes (found by a black-box review: three such stores passed every case). Each broken store here
 * is run through every scripted case of `describeStoreConformance`; at least one must fail it.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, type ChargeRequest, type PolicyStore } from "../src/index.js";
import { budgetCases } from "../src/testing/conformance/budgets.js";
import { capCases } from "../src/testing/conformance/caps.js";
import { idempotencyCases } from "../src/testing/conformance/idempotency.js";
import { kit } from "../src/testing/conformance/kit.js";
import { specSizeCases } from "../src/testing/conformance/spec-sizes.js";

const cases = [...budgetCases, ...specSizeCases, ...idempotencyCases, ...capCases];
const START = Date.UTC(2031, 4, 14, 9, 0, 0);

/** A MemoryStore that changes every request it is handed before charging it. */
function leaky(change: (request: ChargeRequest) => ChargeRequest): () => PolicyStore {
  return () => {
    const inner = new MemoryStore();
    return { charge: (r) => inner.charge(change(r)), release: (t, n) => inner.release(t, n), read: (b, n) => inner.read(b, n), reset: (q) => inner.reset(q) };
  };
}

/** The titles of the scripted cases a store fails. */
async function failed(make: () => PolicyStore): Promise<string[]> {
  const titles: string[] = [];
  let n = 0;
  for (const { title, run } of cases) {
    try {
      await run(make(), kit(START, `c${++n}:`));
    } catch {
      titles.push(title);
    }
  }
  return titles;
}

describe("describeStoreConformance fails stores that are wrong only at the spec's sizes", () => {
  it("MemoryStore passes every scripted case", async () => {
    expect(await failed(() => new MemoryStore())).toEqual([]);
  });

  it.each([
    ["admits one more past any limit of 60 or more", leaky((r) => ({ ...r, budgets: r.budgets.map((b) => (b.limit >= 60 ? { ...b, limit: b.limit + 1 } : b)) }))],
    ["ignores caps of 5 or more", leaky((r) => (r.cap !== undefined && r.cap.limit >= 5 ? { ...r, cap: { ...r.cap, limit: 1e9 } } : r))],
    ["cuts every window to a minute", leaky((r) => ({ ...r, budgets: r.budgets.map((b) => ({ ...b, windowMs: Math.min(b.windowMs, 60_000) })) }))],
    // found by a tools review: this store passed the suite in about half of the seeds (only the property reached it)
    [
      "keeps a released key's first expiry when it counts again",
      (): PolicyStore => {
        const inner = new MemoryStore();
        const firstUse = new Map<string, number>();
        const released = new Set<string>();
        return {
          charge: (r) => {
            const idem = r.idempotency;
            if (idem === undefined) return inner.charge(r);
            const first = firstUse.get(idem.key);
            if (first === undefined || !released.has(idem.key)) {
              if (first === undefined) firstUse.set(idem.key, r.now);
              return inner.charge(r);
            }
            // the bug: recorded again until the first use's end, not for ttlMs from this use
            return inner.charge({ ...r, idempotency: { ...idem, ttlMs: Math.max(1, first + idem.ttlMs - r.now) } });
          },
          release: (t, n) => {
            if (t.idempotencyKey !== undefined) released.add(t.idempotencyKey);
            return inner.release(t, n);
          },
          read: (b, n) => inner.read(b, n),
          reset: (q) => inner.reset(q),
        };
      },
    ],
  ])("a store that %s fails a case", async (_name, make) => {
    expect((await failed(make)).length).toBeGreaterThan(0);
  });
});
