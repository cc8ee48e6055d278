/**
 * MemoryStore keeps a subject's windows together (src/window-table.ts) and finds them by the charge's
 * `subject` and `budget`, or by its key when a charge built by hand leaves them out. Either way a
 * key is one window: held here to a Map of key → count over any mix of charges, reads and resets.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../src/memory-store.js";
import { createPolicy, type Decision } from "../src/index.js";
import { budgetKey } from "../src/store-keys.js";
import type { BudgetCharge } from "../src/store.js";
import { SwitchedStore } from "./operating/outage-store.js";

const NAMES = ["general", "audience", "write", "exports"] as const;
const SUBJECTS = ["k.a", "k.b", "o.a"] as const;
const T = 1_000_000;

/** A budget charge as createPolicy builds it (with its parts), or as a host might (the key alone). */
function charge(subject: string, budget: string, withParts: boolean): BudgetCharge {
  const key = budgetKey(subject, budget);
  return withParts ? { key, limit: 1_000, windowMs: 60_000, subject, budget } : { key, limit: 1_000, windowMs: 60_000 };
}

describe("MemoryStore: a subject's windows kept together", () => {
  it("counts each budget of a charge once, whatever the number of budgets, with or without the key's parts, and a reset by key clears the window either way (property)", () => {
    const budgetList = fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 4 });
    const step = fc.oneof(
      fc.record({ op: fc.constant("charge" as const), subject: fc.constantFrom(...SUBJECTS), names: budgetList, parts: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }) }),
      fc.record({ op: fc.constant("read" as const), subject: fc.constantFrom(...SUBJECTS), names: budgetList, parts: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }) }),
      fc.record({ op: fc.constant("reset" as const), subject: fc.constantFrom(...SUBJECTS), names: budgetList, parts: fc.constant([]) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const store = new MemoryStore();
        const counts = new Map<string, number>();
        for (const s of steps) {
          const budgets = s.names.map((name, i) => charge(s.subject, name, s.parts[i] ?? true));
          if (s.op === "charge") {
            const outcome = store.charge({ id: "req", now: T, budgets, refused: false });
            expect(outcome.kind).toBe("charged");
            for (const [i, b] of budgets.entries()) {
              counts.set(b.key, (counts.get(b.key) ?? 0) + 1);
              expect(outcome.windows[i]!.count, b.key).toBe(counts.get(b.key));
            }
          } else if (s.op === "read") {
            store.read(budgets, T).forEach((w, i) => expect(w.count, budgets[i]!.key).toBe(counts.get(budgets[i]!.key) ?? 0));
          } else {
            store.reset({ windows: budgets.map((b) => b.key), caps: [] });
            for (const b of budgets) counts.delete(b.key);
          }
        }
        expect(store.size).toBe(counts.size);
      }),
      { seed: 20261125, numRuns: 400 },
    );
  });

  it("keeps a hand-built key that spells no subject and budget as a window of its own", () => {
    const store = new MemoryStore();
    const own = { key: "k.a", limit: 1, windowMs: 60_000 };
    const spelled = { key: budgetKey("k.a", "general"), limit: 1, windowMs: 60_000 };
    expect(store.charge({ id: "r1", now: T, budgets: [own], refused: false }).kind).toBe("charged");
    expect(store.charge({ id: "r2", now: T, budgets: [spelled], refused: false }).kind, "another window: its own budget").toBe("charged");
    expect(store.charge({ id: "r3", now: T, budgets: [own], refused: false }).kind).toBe("budget_spent");
  });
});

describe("spec §8 daily caps: a release ticket names a charge of the store that made it", () => {
  const sender = { id: "key_s", kind: "api_key", newsletters: { nl_1: { sending: "write" } } } as const;
  const who = { credential: sender, roles: { nl_1: "owner" } };
  const sendOf = (i: number) => ({ method: "POST", path: `/articles/a_${i}/send`, newsletter: "nl_1" });
  const config = { caps: { dispatch: { limit: 2 } } };

  it("a ticket of another store (another process's, through JSON) uncounts nothing here: the cap stays spent (it freed a send of the same name, and a third send was admitted on a cap of 2; found by an operating review)", async () => {
    const a = createPolicy({ store: new MemoryStore(), config, clock: () => T });
    const b = createPolicy({ store: new MemoryStore(), config, clock: () => T });
    const foreign = JSON.parse(JSON.stringify(await a.check(sendOf(1), who))) as Decision;
    expect(foreign.release).toBeDefined();
    for (let i = 0; i < 2; i++) expect((await b.check(sendOf(i), who)).status).toBe(200);
    expect((await b.check(sendOf(2), who)).status).toBe(429);
    expect(await b.release(foreign)).toBe(false);
    expect((await b.check(sendOf(3), who)).status).toBe(429);
    // its own store still takes it back
    expect(await a.release(foreign)).toBe(true);
  });

  it("an insured ticket of another process uncounts nothing in this one's insurance store", async () => {
    const insured = () => createPolicy({ store: Object.assign(new SwitchedStore(), { down: true }), insurance: { store: new MemoryStore(), share: 0.5 }, config: { caps: { dispatch: { limit: 4 } } }, clock: () => T });
    const [p1, p2] = [insured(), insured()];
    const foreign = await p1.check(sendOf(1), who);
    expect(foreign).toMatchObject({ status: 200, degraded: true });
    for (let i = 0; i < 2; i++) expect((await p2.check(sendOf(i), who)).status).toBe(200);
    expect((await p2.check(sendOf(2), who)).status).toBe(503); // this process's share (2) is spent
    expect(await p2.release(foreign)).toBe(false);
    expect((await p2.check(sendOf(3), who)).status).toBe(503);
  });
});
