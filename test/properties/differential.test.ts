import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/index.js";
import { arbTrace, comparableDecision, runPolicyTrace, runPureTrace, type Trace, type TraceEntry } from "../../src/testing/index.js";
import { BudgetModel, budgetsOf, whose } from "./model.js";
import { TIMEOUT, TRACE, params } from "./settings.js";

/**
 * Whether a release happens on the day its charge was counted. Releasing a past day's charge is
 * unspecified (it counts toward nothing any more): the snapshot still finds it, a swept
 * MemoryStore may not. See regressions.test.ts.
 */
function sameDay(trace: Trace, entry: TraceEntry): boolean {
  if (entry.kind !== "release" || entry.released?.release === undefined) return true;
  const offset = (trace.config.dayStartsAtUtcOffsetMinutes ?? 0) * 60_000;
  return entry.released.release.day === Math.floor((entry.now + offset) / 86_400_000);
}

describe("differential: createPolicy over MemoryStore ≡ the pure evaluate chain", () => {
  it("agree on every decision (status, headers, body, charges, release tickets) and every release over random traces", async () => {
    await fc.assert(
      fc.asyncProperty(arbTrace(TRACE), async (trace) => {
        const pure = runPureTrace(trace, { requestIds: true });
        const stateful = await runPolicyTrace(trace, new MemoryStore(), { requestIds: true });
        expect(stateful.length).toBe(pure.length);
        pure.forEach((p, i) => {
          const s = stateful[i]!;
          if (p.kind === "request" && s.kind === "request") {
            // member ids are the store's own names (the snapshot numbers them by its sequence): compared apart
            expect(comparableDecision(s.decision), `step ${i}: ${p.request.method} ${p.request.path}`).toEqual(comparableDecision(p.decision));
            expect(s.decision.release === undefined).toBe(p.decision.release === undefined);
          } else if (p.kind === "release" && s.kind === "release") {
            if (sameDay(trace, p)) expect(s.uncounted, `step ${i}: release`).toBe(p.uncounted);
          } else expect(s.kind).toBe(p.kind);
        });
      }),
      params(),
    );
  }, TIMEOUT);

  it("agree under the caps focus too (sends, schedules, test sends, releases, idempotent retries)", async () => {
    await fc.assert(
      fc.asyncProperty(arbTrace({ ...TRACE, focus: "caps" }), async (trace) => {
        const pure = runPureTrace(trace, { requestIds: true });
        const stateful = await runPolicyTrace(trace, new MemoryStore({ expirePerCall: 2 }), { requestIds: true });
        expect(stateful.length).toBe(pure.length);
        pure.forEach((p, i) => {
          const s = stateful[i]!;
          if (p.kind === "request" && s.kind === "request") {
            expect(comparableDecision(s.decision), `step ${i}`).toEqual(comparableDecision(p.decision));
            expect(s.decision.release === undefined).toBe(p.decision.release === undefined);
          } else if (p.kind === "release" && s.kind === "release") {
            if (sameDay(trace, p)) expect(s.uncounted, `step ${i}: release`).toBe(p.uncounted);
          } else expect(s.kind).toBe(p.kind);
        });
      }),
      params(),
    );
  }, TIMEOUT);

  it("GET /rate-limit (policy.status) carries the same numbers as the headers would: each budget's limit, remaining and reset", async () => {
    await fc.assert(
      fc.asyncProperty(arbTrace(TRACE), async (trace) => {
        const model = new BudgetModel(trace);
        const all = budgetsOf(trace, "exports.create").concat(budgetsOf(trace, "subscribers.list")).filter((b, i, list) => list.findIndex((o) => o.name === b.name) === i);
        for (const entry of await runPolicyTrace(trace, new MemoryStore())) {
          if (entry.kind === "request") model.request(entry);
          if (entry.kind !== "status") continue;
          const want = Object.fromEntries(all.map((b) => [b.name, model.figures(whose(entry.credential), b, entry.now)]));
          expect(entry.status!.budgets).toEqual(want);
        }
      }),
      params(),
    );
  }, TIMEOUT);
});
