/**
 * The testing kit's options, as a host sets them (found by a new-user review): `maxSteps` below the
 * old fixed minimum of 20 made fast-check throw inside the property; a failing trace could not
 * shrink below 20 steps; `focus: "caps"` almost never reached the test-send cap (its `to` lists
 * drew subscriber ids, which are not addresses: 400); a bad option is a host mistake, named.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evaluate, emptyUsage } from "../src/index.js";
import { arbRequest, arbTrace, describeStoreConformance, runPureTrace } from "../src/testing/index.js";

describe("arbTrace's steps", () => {
  it("maxSteps below 20 works (fast-check threw: the minimum was fixed at 20)", () => {
    for (const maxSteps of [0, 1, 5, 10]) {
      const traces = fc.sample(arbTrace({ maxSteps }), { numRuns: 20, seed: 7 });
      for (const trace of traces) expect(trace.steps.length).toBeLessThanOrEqual(maxSteps);
    }
  });

  it("bad step counts throw PolicyConfigError naming the option, as does describeStoreConformance's maxSteps and numRuns", () => {
    expect(() => arbTrace({ maxSteps: Number.NaN })).toThrow(expect.objectContaining({ name: "PolicyConfigError", field: "maxSteps" }));
    expect(() => arbTrace({ minSteps: 30, maxSteps: 10 })).toThrow(expect.objectContaining({ field: "minSteps" }));
    expect(() => arbTrace({ minSteps: 1.5 })).toThrow(expect.objectContaining({ field: "minSteps" }));
    expect(() => describeStoreConformance("bad", () => ({}) as never, { maxSteps: 0 })).toThrow(expect.objectContaining({ field: "maxSteps" }));
    expect(() => describeStoreConformance("bad", () => ({}) as never, { numRuns: Number.NaN })).toThrow(expect.objectContaining({ field: "numRuns" }));
  });

  it("a failing trace shrinks to the few steps it needs (it kept 21 at least: the minimum was 20)", () => {
    // a "bug" seen at the first allowed request of a trace: the counterexample needs one step
    const result = fc.check(
      fc.property(arbTrace(), (trace) => runPureTrace(trace).every((entry) => entry.kind !== "request" || !entry.decision.allowed)),
      { seed: 3, numRuns: 200 },
    );
    expect(result.failed).toBe(true);
    const [trace] = result.counterexample!;
    expect(trace.steps.length).toBeLessThanOrEqual(3);
  });
});

describe("focus: caps", () => {
  it("traces reach the test-send cap, not the dispatch cap only (1 trace in 600 did)", () => {
    let testSendCap = 0;
    let dispatchCap = 0;
    for (const trace of fc.sample(arbTrace({ focus: "caps" }), { numRuns: 150, seed: 11 })) {
      const capped = runPureTrace(trace).filter((e) => e.kind === "request" && e.decision.status === 429 && /daily/.test(e.decision.body!.error.message));
      if (capped.some((e) => e.kind === "request" && e.operation === "articles.testSend")) testSendCap++;
      if (capped.some((e) => e.kind === "request" && e.operation !== "articles.testSend")) dispatchCap++;
    }
    expect(testSendCap).toBeGreaterThanOrEqual(4);
    expect(dispatchCap).toBeGreaterThanOrEqual(15);
  });

  it("arbRequest({ wellFormed: true }) passes the input checks: no 400, a known operation, the owning newsletter given", () => {
    const credential = { id: "key_1", kind: "api_key", newsletters: { nl_1: { content: "write", audience: "write", sending: "write", insights: "write", settings: "write", webhooks: "write" } } } as const;
    fc.assert(
      fc.property(arbRequest({ wellFormed: true, newsletters: ["nl_1"] }), ({ request, operation }) => {
        const { decision } = evaluate(request, { credential, roles: { nl_1: "owner" }, usage: emptyUsage(), now: Date.UTC(2026, 10, 27, 9) });
        expect(operation).toBeDefined();
        expect(decision.status, JSON.stringify(request)).not.toBe(400);
      }),
      { numRuns: 300, seed: 5 },
    );
  });
});
