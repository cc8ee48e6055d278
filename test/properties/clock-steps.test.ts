/**
 * Budgets under two clocks (spec §8 rate-limit budgets; docs/security.md "Clock steps"): one host
 * stepped back, or a clock flapping between two readings a window or more apart. A request stamped
 * ahead never wipes a spent window: each clock is held to the budget in its own window, and
 * `evaluate` and `MemoryStore` agree on every decision (found by a clock drill: a clock flapping
 * between now and a day ahead let 50 reads of 50 through a budget of 3).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Decision } from "../../src/index.js";
import { get, key } from "../fixtures.js";
import { drivers } from "../hardening/drivers.js";
import { DEEP, SEED } from "./settings.js";

const DAY = 86_400_000;
const W = 60_000;
const T = Date.UTC(2026, 10, 23, 10);
const reader = key({ nl_1: { audience: "read" } });
const roles = { nl_1: "owner" };
const config = { budgets: { audience: { limit: 3, window: 60 } } };
const read = get("/newsletters/nl_1/subscribers");

describe("spec §8 rate-limit budgets under two clocks", () => {
  /** A decision without its request id (each driver makes its own), in the body too. */
  const withoutIds = (d: Decision) => ({ ...d, requestId: "", body: d.body && { error: { ...d.body.error, request_id: "" } } });

  it("as a property: two clocks a window or more apart, requests interleaved in any order over less than a window of real time, admit at most the budget each (evaluate ≡ MemoryStore)", async () => {
    const step = fc.record({ ahead: fc.boolean(), wait: fc.integer({ min: 0, max: 400 }) });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: W, max: 3 * DAY }), fc.array(step, { maxLength: 120 }), async (offset, steps) => {
        const [pure, store] = drivers(reader, roles, config).map((d) => d.make());
        let real = 0;
        const admitted = [0, 0];
        for (const { ahead, wait } of steps) {
          real += wait;
          const now = T + real + (ahead ? offset : 0);
          const a = await pure!.check(read, now);
          const b = await store!.check(read, now);
          expect(withoutIds(b)).toEqual(withoutIds(a));
          if (a.allowed) admitted[ahead ? 1 : 0]!++;
        }
        // 120 steps of at most 400 ms: under a minute of real time, one window by either clock
        expect(admitted[0]).toBeLessThanOrEqual(3);
        expect(admitted[1]).toBeLessThanOrEqual(3);
      }),
      { seed: SEED, numRuns: DEEP ? 1000 : 60 },
    );
  }, 600_000);
});
