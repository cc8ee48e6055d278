/**
 * Scripted cases at the spec's own sizes: budgets of 600 and 60 a minute (spec §8), windows longer
 * than a minute (a plan's hour), daily caps of 25 and 50 (spec §8). The other cases use small
 * numbers, which a store that is wrong only at these sizes passes (found by a black-box review: a
 * store that admitted one more past any limit of 60 or more, one that ignored caps of 5 or more and
 * one that cut every window to a minute passed the whole suite, and under `createPolicy` admitted 61
 * audience reads a minute and 40 sends a day).
 */
import { expect } from "../vitest-api.js";
import { comparableOutcome } from "./comparable.js";
import type { ScriptedCase } from "./kit.js";
import { charge, read } from "./store-calls.js";

const DAY_MS = 86_400_000;

export const specSizeCases: readonly ScriptedCase[] = [
  {
    title: "spec §8 sizes: audience 60 and general 600 a minute admit exactly 60 and 600 in a window, then budget_spent",
    run: async (store, k) => {
      const general = k.budget("general", 600, 60);
      const audience = k.budget("audience", 60, 60);
      const write = k.budget("write", 60, 60);
      const kinds: string[] = [];
      for (let i = 0; i < 61; i++) kinds.push(comparableOutcome(await charge(store, k.request(i, [general, audience]))).kind);
      expect(kinds.lastIndexOf("charged"), "the 60th audience read is the last admitted").toBe(59);
      expect(kinds[60]).toBe("budget_spent");
      // general: 60 charged with audience, then 540 alone
      for (let charged = 60; charged < 600; charged++) {
        expect(comparableOutcome(await charge(store, k.request(100 + charged, [general]))).kind, `general charge ${charged + 1} of 600`).toBe("charged");
      }
      expect(comparableOutcome(await charge(store, k.request(59_000, [general, write]))).kind).toBe("budget_spent");
      expect(await read(store, [general, audience, write], k.start + 59_001)).toEqual([
        { count: 600, resetAt: k.start + 60_000 },
        { count: 60, resetAt: k.start + 60_000 },
        { count: 0, resetAt: 0 },
      ]);
    },
  },
  {
    title: "a window of an hour (a plan's) stays open past a minute and ends at its start + 3 600 s",
    run: async (store, k) => {
      const hourly = k.budget("general", 5, 3600);
      for (let i = 0; i < 5; i++) expect(comparableOutcome(await charge(store, k.request(i, [hourly]))).kind).toBe("charged");
      for (const at of [60_000, 61_000, 1_800_000, 3_599_999]) {
        expect(comparableOutcome(await charge(store, k.request(at, [hourly]))), `at ${at} ms`).toEqual({ kind: "budget_spent", windows: [{ count: 5, resetAt: k.start + 3_600_000 }] });
      }
      expect(comparableOutcome(await charge(store, k.request(3_600_000, [hourly])))).toMatchObject({ kind: "charged", windows: [{ count: 1, resetAt: k.start + 7_200_000 }] });
    },
  },
  {
    title: "spec §8 sizes: a dispatch cap of 25 and a test-send cap of 50 admit exactly 25 and 50 a day, then cap_reached",
    run: async (store, k) => {
      const general = k.budget("general", 1000, 60);
      const day = Math.floor(k.start / DAY_MS) * DAY_MS + 2 * DAY_MS + 3_600_000 - k.start; // 01:00 two days on
      for (const [cap, limit] of [["dispatch", 25], ["testSend", 50]] as const) {
        const send = (at: number) => k.request(day + at, [general], { cap: k.cap(`sizes:${cap}`, limit, k.start + day + at, 0, cap) });
        const kinds: string[] = [];
        for (let i = 0; i <= limit; i++) kinds.push(comparableOutcome(await charge(store, send(i))).kind);
        expect(kinds.filter((kind) => kind === "charged"), `${cap}: exactly ${limit} counted`).toHaveLength(limit);
        expect(comparableOutcome(await charge(store, send(limit + 1)))).toMatchObject({ kind: "cap_reached", count: limit });
        // the next day starts from zero
        expect(comparableOutcome(await charge(store, send(DAY_MS)))).toMatchObject({ kind: "charged", counted: true });
      }
    },
  },
];
