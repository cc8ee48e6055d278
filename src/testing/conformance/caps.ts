/**
 * Scripted cases of daily caps: counted per key and per day (whatever the day start), `release`
 * uncounting a charge once and freeing its place, and a member per counted charge.
 */
import { expect } from "../vitest-api.js";
import { comparableOutcome } from "./comparable.js";
import type { ScriptedCase } from "./kit.js";
import { charge } from "./store-calls.js";

const DAY_MS = 86_400_000;

export const capCases: readonly ScriptedCase[] = [
  {
    title: "daily caps: counted per key and per day, cap_reached carries the count, a new day starts from zero",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      for (const offsetMs of [0, -5 * 3_600_000]) {
        const base = Math.floor(start / DAY_MS) * DAY_MS + 3 * DAY_MS - offsetMs + 3_600_000 - start; // 01:00 at the day start, 3 days on
        const send = (at: number, key: string) => k.request(base + at, [g], { cap: k.cap(`${key}:${offsetMs}`, 2, start + base + at, offsetMs) });
        const outcomes = [];
        for (let i = 0; i < 3; i++) outcomes.push(comparableOutcome(await charge(store, send(i, "c1"))));
        expect(outcomes.map((o) => [o.kind, o.counted ?? o.count])).toEqual([
          ["charged", true],
          ["charged", true],
          ["cap_reached", 2],
        ]);
        expect(comparableOutcome(await charge(store, send(3, "c2")))).toMatchObject({ kind: "charged", counted: true });
        expect(comparableOutcome(await charge(store, send(DAY_MS - 3_600_001, "c1"))).kind).toBe("cap_reached"); // the last ms of the day
        expect(comparableOutcome(await charge(store, send(DAY_MS - 3_600_000, "c1")))).toMatchObject({ kind: "charged", counted: true });
      }
    },
  },
  {
    title: "DESIGN §7 release: uncounts once (true, then false), frees the place, and lets the key count again, not as a replay",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      const send = (at: number, key?: string) => k.send(at, [g], 1, key);
      const first = send(0, "k1");
      const counted = await charge(store, first);
      expect(comparableOutcome(await charge(store, send(1)))).toMatchObject({ kind: "cap_reached", count: 1 });
      const ticket = k.ticket(first, counted);
      expect(await store.release(ticket, start + 2)).toBe(true);
      expect(await store.release(ticket, start + 3)).toBe(false);
      // the key counts again on its next allowed use, and that use is no replay: the released send
      // failed downstream, so its retry must run again (DESIGN §7)
      const again = await charge(store, send(4, "k1"));
      expect(comparableOutcome(again)).toMatchObject({ kind: "charged", replay: false, counted: true });
      expect(comparableOutcome(await charge(store, send(5, "k1")))).toMatchObject({ kind: "charged", replay: true, counted: false });
      expect(comparableOutcome(await charge(store, send(6)))).toMatchObject({ kind: "cap_reached", count: 1 });
      expect(await store.release(k.ticket(send(4, "k1"), again), start + 7)).toBe(true);
      expect(comparableOutcome(await charge(store, send(8)))).toMatchObject({ kind: "charged", counted: true });
    },
  },
  {
    title: "members are unique: every counted charge gets its own member",
    run: async (store, k) => {
      const { start } = k;
      const g = k.budget("general", 100, 60);
      const members = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const outcome = await charge(store, k.request(i, [g], { cap: k.cap(`nl${i % 2}`, 10, start + i, 0, i % 2 ? "testSend" : "dispatch") }));
        if (outcome.kind === "charged" && outcome.member !== undefined) members.add(outcome.member);
      }
      expect(members.size).toBe(6);
    },
  },
];
