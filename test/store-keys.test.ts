/**
 * The store keys of a request (src/store-keys.ts, src/charge-request.ts): a subject's budget charges
 * are cached with the subject `subjectOf` found, and the cache must never hand one credential's keys
 * (or one budget list's limits) to another, whatever order the calls come in.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { budgetCharges } from "../src/charge-request.js";
import type { BudgetSpec } from "../src/config-types.js";
import { budgetKey, subjectOf } from "../src/store-keys.js";
import type { Credential } from "../src/types.js";

const lists: readonly (readonly BudgetSpec[])[] = [
  [{ name: "general", limit: 600, window: 60 }],
  [
    { name: "general", limit: 600, window: 60 },
    { name: "audience", limit: 120, window: 60 },
  ],
  [
    { name: "general", limit: 5, window: 1 },
    { name: "write", limit: 7, window: 3600 },
  ],
].map((list) => Object.freeze(list.map((b) => Object.freeze({ ...b }) as BudgetSpec)));

/** The charges written out from the rule: key per subject and budget name, the list's limit and window. */
function expected(subject: string, list: readonly BudgetSpec[]) {
  return list.map((b) => ({ key: budgetKey(subject, b.name), limit: b.limit, windowMs: b.window * 1000 }));
}

describe("budget charges per subject (cached with subjectOf)", () => {
  it("any interleaving of subjectOf and budgetCharges gives every subject its own keys and each list its own limits", () => {
    const credential = fc.record({ id: fc.constantFrom("k1", "k2", "k3", "o.k1", "k.k1"), kind: fc.constantFrom("api_key" as const, "oauth" as const) });
    const step = fc.oneof(
      fc.record({ op: fc.constant("subject" as const), credential }),
      fc.record({ op: fc.constant("charges" as const), credential, list: fc.nat(lists.length - 1), fresh: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        for (const s of steps) {
          const c = { ...s.credential, newsletters: {} } as Credential;
          if (s.op === "subject") {
            subjectOf(c);
            continue;
          }
          // the subject as the caller passes it: the string subjectOf gave, or an equal one built anew
          const subject = s.fresh ? [c.kind === "oauth" ? "o" : "k", ".", c.id].join("") : subjectOf(c);
          expect(budgetCharges(subject, lists[s.list]!)).toEqual(expected(subject, lists[s.list]!));
        }
      }),
      { seed: 20261125, numRuns: 300 },
    );
  });

  it("an API key and an OAuth authorisation with the same id never share keys (spec §5.1, §8.3)", () => {
    const key = subjectOf({ id: "same", kind: "api_key" });
    const oauth = subjectOf({ id: "same", kind: "oauth" });
    expect(key).not.toBe(oauth);
    expect(budgetCharges(oauth, lists[1]!)[0]!.key).not.toBe(budgetCharges(key, lists[1]!)[0]!.key);
  });
});
