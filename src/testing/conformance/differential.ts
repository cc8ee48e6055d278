/**
 * The two differential properties: random `ChargeRequest` programs, and random policy traces through
 * `createPolicy`, run over the store under test and over a `MemoryStore`, every answer compared.
 */
import fc from "fast-check";
import { it, expect } from "../vitest-api.js";
import { defineConfig } from "../../config.js";
import { MemoryStore } from "../../memory-store.js";
import type { PolicyStore } from "../../store.js";
import { arbTrace } from "../arbitraries/traces.js";
import { runPolicyTrace } from "../run-trace.js";
import { comparableEntry } from "./comparable.js";
import { arbProgram } from "./program.js";
import { runProgram } from "./run-program.js";

/** What the differential properties need from the suite. */
export interface DifferentialSettings {
  /** A fresh store under test (the suite cleans it up). */
  readonly fresh: () => Promise<PolicyStore>;
  /** A key prefix no other test or run of the suite uses. */
  readonly nextPrefix: () => string;
  readonly numRuns: number;
  readonly seed: number | undefined;
  readonly maxSteps: number;
  /** Whether programs draw reset operations. */
  readonly resets: boolean;
  readonly timeout: number;
}

/** Declares the two differential properties (vitest `it`s) in the current suite. */
export function describeDifferentials({ fresh, nextPrefix, numRuns, seed, maxSteps, resets, timeout }: DifferentialSettings): void {
  const parameters = { numRuns, ...(seed !== undefined && { seed }) };

  it("differential: random ChargeRequest programs give MemoryStore's outcomes, releases and readings", async () => {
    await fc.assert(
      fc.asyncProperty(arbProgram(maxSteps, resets), async (program) => {
        const store = await fresh();
        const reference = new MemoryStore();
        const prefix = nextPrefix();
        await runProgram(program, prefix, reference, store);
      }),
      parameters,
    );
  }, timeout);

  it("differential: createPolicy over the store decides every request of a trace as over MemoryStore", async () => {
    await fc.assert(
      fc.asyncProperty(arbTrace({ maxSteps }), async (trace) => {
        const store = await fresh();
        const expected = await runPolicyTrace(trace, new MemoryStore());
        const actual = await runPolicyTrace(trace, store);
        const offset = defineConfig(trace.config).dayStartsAtUtcOffsetMinutes * 60_000;
        expected.forEach((want, i) => expect(comparableEntry(actual[i]!, offset), `step ${i}`).toEqual(comparableEntry(want, offset)));
      }),
      parameters,
    );
  }, timeout);
}
