/** Scripted case of concurrent charges: neither a budget nor a cap is ever over-spent. */
import { expect } from "../vitest-api.js";
import type { ScriptedCase } from "./kit.js";
import { charge } from "./store-calls.js";

export const concurrencyCases: readonly ScriptedCase[] = [
  {
    title: "concurrent charges never over-spend a budget or a cap",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 4, 60);
      const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => charge(store, k.request(i, [g]))));
      expect(outcomes.filter((o) => o.kind === "charged")).toHaveLength(4);
      expect(outcomes.filter((o) => o.kind === "budget_spent")).toHaveLength(6);
      const roomy = k.budget("roomy", 100, 60);
      const sends = await Promise.all(Array.from({ length: 7 }, (_, i) => charge(store, k.request(20 + i, [roomy], { cap: k.cap("busy", 3, start) }))));
      const members = sends.flatMap((o) => (o.kind === "charged" && o.member !== undefined ? [o.member] : []));
      expect(new Set(members).size).toBe(3);
      expect(sends.filter((o) => o.kind === "cap_reached")).toHaveLength(4);
    },
  },
];
