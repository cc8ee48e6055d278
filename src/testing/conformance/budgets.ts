/**
 * Scripted cases of budgets: a window charged up to its limit, fixed windows rolling over, all or
 * nothing across a request's budgets, a refused request charging only its budgets, and `read()`.
 */
import { expect } from "../vitest-api.js";
import { comparableOutcome, type ComparableOutcome } from "./comparable.js";
import type { ScriptedCase } from "./kit.js";
import { charge, read } from "./store-calls.js";

export const budgetCases: readonly ScriptedCase[] = [
  {
    title: "charges a budget up to its limit, then answers budget_spent and charges nothing",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 3, 10);
      const counts: ComparableOutcome[] = [];
      for (let i = 0; i < 4; i++) counts.push(comparableOutcome(await charge(store, k.request(i * 1000, [g]))));
      expect(counts).toEqual([
        { kind: "charged", windows: [{ count: 1, resetAt: start + 10_000 }], replay: false, counted: false },
        { kind: "charged", windows: [{ count: 2, resetAt: start + 10_000 }], replay: false, counted: false },
        { kind: "charged", windows: [{ count: 3, resetAt: start + 10_000 }], replay: false, counted: false },
        { kind: "budget_spent", windows: [{ count: 3, resetAt: start + 10_000 }] },
      ]);
      expect(await read(store, [g], start + 5000)).toEqual([{ count: 3, resetAt: start + 10_000 }]);
    },
  },
  {
    title: "a window ends at its start + windowMs; the next one starts at the first charge after it (fixed windows)",
    run: async (store, k) => {
      const { start } = k;
      const w = k.budget("write", 2, 5);
      await charge(store, k.request(0, [w]));
      await charge(store, k.request(1000, [w]));
      expect(comparableOutcome(await charge(store, k.request(4999, [w]))).kind).toBe("budget_spent");
      expect(comparableOutcome(await charge(store, k.request(5000, [w])))).toMatchObject({ kind: "charged", windows: [{ count: 1, resetAt: start + 10_000 }] });
      expect(comparableOutcome(await charge(store, k.request(7000, [w])))).toMatchObject({ kind: "charged", windows: [{ count: 2, resetAt: start + 10_000 }] });
      expect(await read(store, [w], start + 10_000)).toEqual([{ count: 0, resetAt: 0 }]);
      expect(comparableOutcome(await charge(store, k.request(12_345, [w])))).toMatchObject({ windows: [{ count: 1, resetAt: start + 17_345 }] });
    },
  },
  {
    title: "all or nothing: when one budget is spent, none of the request's budgets is charged",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 5, 60);
      const a = k.budget("audience", 1, 60);
      await charge(store, k.request(0, [g, a]));
      expect(comparableOutcome(await charge(store, k.request(1, [g, a])))).toEqual({
        kind: "budget_spent",
        windows: [
          { count: 1, resetAt: start + 60_000 },
          { count: 1, resetAt: start + 60_000 },
        ],
      });
      expect(await read(store, [g, a], start + 2)).toEqual([
        { count: 1, resetAt: start + 60_000 },
        { count: 1, resetAt: start + 60_000 },
      ]);
      expect(comparableOutcome(await charge(store, k.request(3, [g])))).toMatchObject({ kind: "charged", windows: [{ count: 2 }] });
    },
  },
  {
    title: "a refused request (refused: true) charges its budgets and nothing else: no key recorded, no cap counted",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 10, 60);
      const refused = await charge(store, k.request(0, [g], { refused: true, idempotency: k.key("k1", "POST /a"), cap: k.cap("nl", 1, start) }));
      expect(comparableOutcome(refused)).toEqual({ kind: "charged", windows: [{ count: 1, resetAt: start + 60_000 }], replay: false, counted: false });
      // the key was not recorded: another fingerprint is no conflict; the cap still has its one place
      const other = await charge(store, k.request(1, [g], { idempotency: k.key("k1", "POST /b"), cap: k.cap("nl", 1, start) }));
      expect(comparableOutcome(other)).toEqual({ kind: "charged", windows: [{ count: 2, resetAt: start + 60_000 }], replay: false, counted: true });
      const full = await charge(store, k.request(2, [g], { cap: k.cap("nl", 1, start) }));
      expect(comparableOutcome(full)).toEqual({ kind: "cap_reached", windows: [{ count: 3, resetAt: start + 60_000 }], count: 1 });
    },
  },
  {
    title: "read() reports windows without charging; an unused or ended window reads { count: 0, resetAt: 0 }",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 3, 10);
      const a = k.budget("audience", 3, 20);
      expect(await read(store, [g, a], start)).toEqual([
        { count: 0, resetAt: 0 },
        { count: 0, resetAt: 0 },
      ]);
      await charge(store, k.request(0, [g, a]));
      for (let i = 0; i < 5; i++) expect(await read(store, [g, a], start + 1 + i)).toEqual([
        { count: 1, resetAt: start + 10_000 },
        { count: 1, resetAt: start + 20_000 },
      ]);
      expect(await read(store, [g, a], start + 10_000)).toEqual([
        { count: 0, resetAt: 0 },
        { count: 1, resetAt: start + 20_000 },
      ]);
      expect(comparableOutcome(await charge(store, k.request(10_001, [g])))).toMatchObject({ windows: [{ count: 1, resetAt: start + 20_001 }] });
    },
  },
];
