/** Scripted cases of `reset`: windows, one day of a cap, one scope of idempotency records, and what a reset leaves alone. */
import { expect } from "../vitest-api.js";
import { comparableOutcome } from "./comparable.js";
import type { ScriptedCase } from "./kit.js";
import { charge, read, resetIn } from "./store-calls.js";

export const resetCases: readonly ScriptedCase[] = [
  {
    title: "reset clears the named budget windows, and no other window",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 2, 60);
      const a = k.budget("audience", 2, 60);
      const other = k.budget("other", 2, 60);
      await charge(store, k.request(0, [g, a, other]));
      await charge(store, k.request(1, [g, a, other]));
      await resetIn(store, { windows: [g.key, a.key], caps: [] }, start + 2);
      expect(await read(store, [g, a, other], start + 3)).toEqual([
        { count: 0, resetAt: 0 },
        { count: 0, resetAt: 0 },
        { count: 2, resetAt: start + 60_000 },
      ]);
      // a cleared window starts again at its next charge
      expect(comparableOutcome(await charge(store, k.request(4, [g])))).toMatchObject({ kind: "charged", windows: [{ count: 1, resetAt: start + 60_004 }] });
      expect(comparableOutcome(await charge(store, k.request(5, [other]))).kind).toBe("budget_spent");
    },
  },
  {
    title: "reset clears one day's count of the named cap, and no other cap; a reset of another day changes nothing",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      const send = (at: number, cap: string) => k.request(at, [g], { cap: k.cap(cap, 2, start + at) });
      for (let i = 0; i < 2; i++) {
        await charge(store, send(i, "nl_a"));
        await charge(store, send(i, "nl_b"));
      }
      const today = k.cap("nl_a", 2, start);
      await resetIn(store, { windows: [], caps: [{ key: today.key, day: today.day - 1, offsetMs: 0 }] }, start + 3);
      expect(comparableOutcome(await charge(store, send(4, "nl_a")))).toMatchObject({ kind: "cap_reached", count: 2 });
      await resetIn(store, { windows: [], caps: [{ key: today.key, day: today.day, offsetMs: 0 }] }, start + 5);
      expect(comparableOutcome(await charge(store, send(6, "nl_a")))).toMatchObject({ kind: "charged", counted: true });
      expect(comparableOutcome(await charge(store, send(7, "nl_b")))).toMatchObject({ kind: "cap_reached", count: 2 });
      expect(await read(store, [g], start + 8)).toEqual([{ count: 7, resetAt: start + 60_000 }]); // budgets untouched
    },
  },
  {
    title: "reset clears every idempotency record of the named scope, and no other record",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      const write = (at: number, scope: string, key: string, fingerprint: string) => k.request(at, [g], { idempotency: k.scopedKey(scope, key, fingerprint) });
      await charge(store, write(0, "c1", "k1", "POST /a"));
      await charge(store, write(1, "c1", "k2", "POST /b"));
      await charge(store, write(2, "c2", "k1", "POST /a"));
      await charge(store, k.request(3, [g], { idempotency: k.key("k1", "POST /a") }));
      await resetIn(store, { windows: [], caps: [], idempotencyScope: k.scope("c1") }, start + 4);
      // c1's keys are new again: another fingerprint is no conflict, and not a replay
      expect(comparableOutcome(await charge(store, write(5, "c1", "k1", "POST /z")))).toMatchObject({ kind: "charged", replay: false });
      expect(comparableOutcome(await charge(store, write(6, "c1", "k2", "POST /z")))).toMatchObject({ kind: "charged", replay: false });
      expect(comparableOutcome(await charge(store, write(7, "c2", "k1", "POST /z")))).toMatchObject({ kind: "conflict", fingerprint: "POST /a" });
      expect(comparableOutcome(await charge(store, k.request(8, [g], { idempotency: k.key("k1", "POST /z") })))).toMatchObject({ kind: "conflict" });
    },
  },
  {
    title: "a cap charge cleared by reset no longer releases; a reset of nothing recorded is no error",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      const first = k.request(0, [g], { cap: k.cap("nl", 1, start), idempotency: k.scopedKey("c1", "k1", "POST /send") });
      const counted = await charge(store, first);
      await resetIn(store, { windows: [], caps: [{ key: first.cap!.key, day: first.cap!.day, offsetMs: 0 }] }, start + 1);
      expect(await store.release(k.ticket(first, counted), start + 2)).toBe(false);
      await resetIn(store, { windows: [k.budget("unused", 1, 1).key], caps: [{ key: k.cap("none", 1, start).key, day: first.cap!.day, offsetMs: 0 }], idempotencyScope: k.scope("nobody") }, start + 3);
    },
  },
];
