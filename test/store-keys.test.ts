/**
 * The store keys of a request (src/store-keys.ts, src/charge-request.ts): a subject's budget charges
 * are cached with the subject (`subjectKeysOf`), and the cache must never hand one credential's keys
 * (or one budget list's limits) to another, whatever order the calls come in.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { budgetCharges } from "../src/charge-request.js";
import type { BudgetSpec } from "../src/config-types.js";
import { budgetKey, budgetKeyParts, budgetSubjectEnd, capKey, oneUseBudgetKey, SubjectKeys, subjectKeysOf, subjectOf, utf8Safe } from "../src/store-keys.js";
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
  return list.map((b) => ({ key: budgetKey(subject, b.name), limit: b.limit, windowMs: b.window * 1000, subject, budget: b.name }));
}

describe("budget charges per subject (cached with subjectOf)", () => {
  it("any interleaving of credentials and budget lists gives every subject its own keys and each list its own limits", () => {
    const credential = fc.record({ id: fc.constantFrom("k1", "k2", "k3", "o.k1", "k.k1"), kind: fc.constantFrom("api_key" as const, "oauth" as const) });
    const step = fc.record({ credential, list: fc.nat(lists.length - 1) });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        for (const s of steps) {
          const c = { ...s.credential, newsletters: {} } as Credential;
          // the subject written out from the rule (spec §5.1, §8.3: per API key or per OAuth authorisation)
          const subject = [c.kind === "oauth" ? "o" : "k", ".", c.id].join("");
          expect(subjectOf(c)).toBe(subject);
          expect(budgetCharges(subjectKeysOf(c), lists[s.list]!)).toEqual(expected(subject, lists[s.list]!));
        }
      }),
      { seed: 20261125, numRuns: 300 },
    );
  });

  it("an API key and an OAuth authorisation with the same id never share keys (spec §5.1, §8.3)", () => {
    const key = subjectKeysOf({ id: "same", kind: "api_key" });
    const oauth = subjectKeysOf({ id: "same", kind: "oauth" });
    expect(key.subject).not.toBe(oauth.subject);
    expect(budgetCharges(oauth, lists[1]!)[0]!.key).not.toBe(budgetCharges(key, lists[1]!)[0]!.key);
  });
});

describe("subjects the cache does not keep (more credentials in rotation than it holds)", () => {
  it("still get their own keys and each list's limits, built for the one request and not kept", () => {
    // 4 096 subjects fill the cache without a hit: the next miss finds it full and it sits out
    for (let i = 0; i <= 4_096; i++) subjectKeysOf({ id: `fill_${i}`, kind: "oauth" }); // OAuth subjects have a cache of their own
    const credential = { id: "one_use", kind: "oauth" } as const;
    const entry = subjectKeysOf(credential);
    expect(entry.lists, "a one-use subject holds no lists").toBeUndefined();
    expect(subjectKeysOf(credential), "not kept: built again").not.toBe(entry);
    for (const list of lists) expect(budgetCharges(entry, list)).toEqual(expected("o.one_use", list));
    expect(Object.isFrozen(budgetCharges(entry, lists[1]!))).toBe(true);
    expect(Object.isFrozen(budgetCharges(entry, lists[1]!)[0])).toBe(true);
  });

  it("the kept and one-use charges agree for any subject and list (the two builders are one rule)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.constantFrom("api_key" as const, "oauth" as const), fc.nat(lists.length - 1), (id, kind, at) => {
        const subject = subjectKeysOf({ id, kind }).subject;
        const list = lists[at]!;
        expect(budgetCharges(new SubjectKeys(subject, true), list)).toEqual(budgetCharges(new SubjectKeys(subject, false), list));
        expect(budgetCharges(new SubjectKeys(subject, false), list)).toEqual(expected(subject, list));
      }),
      { seed: 20261125, numRuns: 300 },
    );
  });
});

describe("a budget key read back into its parts (MemoryStore keeps a subject's windows together by them)", () => {
  it("gives the subject and budget a key was spelled from, for any subject and any non-empty budget name (and a one-use key is the same text)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.string({ minLength: 1, maxLength: 20 }), (subject, budget) => {
        expect(budgetKeyParts(budgetKey(subject, budget))).toEqual({ subject, budget });
        expect(oneUseBudgetKey(subject, budget)).toBe(budgetKey(subject, budget));
        // where the subject ends: what evaluate places a credential's budget windows by
        const key = budgetKey(subject, budget);
        expect(budgetSubjectEnd(key)).toBe(key.length - budget.length - 1);
      }),
      { seed: 20261125, numRuns: 1_000 },
    );
  });

  it("reads any other string as no parts, so two different keys are never one window", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 }).map((s) => `b:${s}`), fc.tuple(fc.string(), fc.nat(40), fc.string()).map(([a, n, b]) => `b:${n}.${a}:${b}`)), (key) => {
        const parts = budgetKeyParts(key);
        if (parts !== undefined) expect(budgetKey(parts.subject, parts.budget)).toBe(key);
      }),
      { seed: 20261125, numRuns: 2_000 },
    );
    for (const key of ["b:general", "b:01.k:general", "b:1.k:", "b:+1.k:x", "b:1e0.k:x", "b:2.k:x", "x:1.k:general", "b:-0.:x", ""]) expect(budgetKeyParts(key), key).toBeUndefined();
  });
});

describe("ids as Redis can carry them (utf8Safe): one to one, well-formed", () => {
  // Redis clients write strings as UTF-8, where a lone surrogate becomes U+FFFD: x\uD800 and x\uDC00
  // spelled one Redis key, so two credentials shared counters and one's write was the other's replay
  // (found by a review of RedisStore with hostile ids)
  const odd = fc.string({ unit: fc.oneof(fc.constantFrom("\uD800", "\uDBFF", "\uDC00", "\uDFFF", "\uFFFD", "😀", "a", "0"), fc.string({ unit: "binary", maxLength: 1 })), maxLength: 8 });

  it("two ids give one result only when they are one id, and the result survives UTF-8 unchanged", () => {
    fc.assert(
      fc.property(odd, odd, (a, b) => {
        expect(utf8Safe(a) === utf8Safe(b)).toBe(a === b);
        expect(new TextDecoder().decode(new TextEncoder().encode(utf8Safe(a)))).toBe(utf8Safe(a));
      }),
      { numRuns: 2000 },
    );
    expect(utf8Safe("plain id_1")).toBe("plain id_1");
    expect(utf8Safe("x😀")).toBe("x😀");
  });

  it("credentials and newsletters whose ids differ in a lone surrogate get their own keys", () => {
    const a = subjectOf({ id: "tenant_\uD800", kind: "oauth" });
    const b = subjectOf({ id: "tenant_\uDC00", kind: "oauth" });
    const c = subjectOf({ id: "tenant_\uFFFD", kind: "oauth" });
    expect(new Set([a, b, c]).size).toBe(3);
    const utf8 = (s: string) => Buffer.from(s, "utf8").toString("hex");
    expect(new Set([utf8(a), utf8(b), utf8(c)]).size).toBe(3);
    expect(utf8(capKey("dispatch", "", "nl_\uD800"))).not.toBe(utf8(capKey("dispatch", "", "nl_\uDBFF")));
  });
});
