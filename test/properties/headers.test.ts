import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbTrace, runPureTrace } from "../../src/testing/index.js";
import { BudgetModel, budgetsOf, isCap429, policyHeader, requests } from "./model.js";
import { TIMEOUT, TRACE, params } from "./settings.js";

const FOUR = ["RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];
const DAY_MS = 86_400_000;

describe("invariants: rate-limit headers (spec §8, DESIGN §4–§6)", () => {
  it("every response carries the four RateLimit-* headers, consistent with the counters (closest to running out; ties to the longer reset)", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        const model = new BudgetModel(trace);
        for (const entry of requests(runPureTrace(trace))) {
          const want = model.request(entry);
          const { ["Retry-After"]: _ra, ...got } = entry.decision.headers;
          const { ["Retry-After"]: _wa, ...expected } = want.headers;
          expect(got, `${entry.decision.status} ${entry.request.method} ${entry.request.path} at +${entry.now - trace.start} ms`).toEqual(expected);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("RateLimit-Policy lists exactly the budgets the operation belongs to, in policy order, and never a daily cap", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const policy = entry.decision.headers["RateLimit-Policy"]!;
          expect(policy).toBe(policyHeader(budgetsOf(trace, entry.operation)));
          expect(policy).not.toMatch(/dispatch|test/i);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("Retry-After is a whole number ≥ 1 on every 429 and absent otherwise; the header names are exactly the spec's", () => {
    fc.assert(
      fc.property(arbTrace(TRACE), (trace) => {
        for (const entry of requests(runPureTrace(trace))) {
          const { headers, status } = entry.decision;
          if (status === 429) {
            expect(Object.keys(headers).sort()).toEqual([...FOUR, "Retry-After"].sort());
            expect(headers["Retry-After"]).toMatch(/^[1-9][0-9]*$/);
          } else {
            expect(Object.keys(headers).sort()).toEqual([...FOUR].sort());
          }
          for (const name of FOUR.slice(1)) expect(headers[name], name).toMatch(/^(0|[1-9][0-9]*)$/);
          expect(Number(headers["RateLimit-Reset"])).toBeGreaterThanOrEqual(1);
        }
      }),
      params(),
    );
  }, TIMEOUT);

  it("a daily-cap 429's Retry-After is the whole hours (or seconds, when configured) until the configured day start, rounded up, at least 1", () => {
    fc.assert(
      fc.property(arbTrace({ ...TRACE, focus: "caps" }), (trace) => {
        const offset = (trace.config.dayStartsAtUtcOffsetMinutes ?? 0) * 60_000;
        for (const entry of requests(runPureTrace(trace))) {
          if (!isCap429(entry.decision)) continue;
          const resetAt = (Math.floor((entry.now + offset) / DAY_MS) + 1) * DAY_MS - offset;
          const unit = trace.config.dailyRetryAfter === "seconds" ? 1000 : 3_600_000;
          expect(entry.decision.headers["Retry-After"]).toBe(String(Math.max(1, Math.ceil((resetAt - entry.now) / unit))));
          expect(entry.decision.body!.error.message).toMatch(/daily limit/);
          expect(entry.decision.body!.error.message).toContain(unit === 1000 ? "seconds" : "hours");
        }
      }),
      params(),
    );
  }, TIMEOUT);
});
