/**
 * Random store programs: a start time, a day start, an idempotency lifetime, four budgets, two cap
 * limits, and a list of charges, releases, reads and (unless turned off) resets at moving times.
 */
import fc from "fast-check";
import { IDEMPOTENCY_TTL_MS } from "../../store.js";
import type { CapName } from "../../types.js";

/** One operation of a random store program. */
export type ProgramOp =
  | { op: "charge"; advance: number; budgets: number[]; refused: boolean; idem: [number, number] | null; cap: [number, CapName] | null }
  | { op: "release"; advance: number; pick: number }
  | { op: "read"; advance: number; budgets: number[] }
  | { op: "reset"; advance: number; budgets: number[]; cap: number | null; scope: number | null };

/** A random store program: its clock, day start, key lifetime, budgets, cap limits and operations. */
export interface Program {
  start: number;
  offsetMs: number;
  ttlMs: number;
  budgets: { limit: number; windowMs: number }[];
  capLimits: number[];
  ops: ProgramOp[];
}

/** Programs of at most `maxSteps` operations; `resets`: whether reset operations are drawn. */
export function arbProgram(maxSteps: number, resets: boolean): fc.Arbitrary<Program> {
  const advance = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 1500 }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 6 }).map((s) => s * 1000) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }).map((h) => h * 3_600_000) },
  );
  const budgetSet = fc.uniqueArray(fc.nat({ max: 3 }), { minLength: 1, maxLength: 3 });
  const op: fc.Arbitrary<ProgramOp> = fc.oneof(
    {
      weight: 12,
      arbitrary: fc.record({
        op: fc.constant("charge" as const),
        advance,
        budgets: budgetSet,
        refused: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
        idem: fc.option(fc.tuple(fc.nat({ max: 2 }), fc.nat({ max: 2 })), { nil: null }),
        cap: fc.option(fc.tuple(fc.nat({ max: 1 }), fc.constantFrom<CapName>("dispatch", "testSend")), { nil: null }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("release" as const), advance, pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("read" as const), advance, budgets: budgetSet }) },
    ...(resets
      ? [
          {
            weight: 1,
            arbitrary: fc.record({
              op: fc.constant("reset" as const),
              advance,
              budgets: fc.uniqueArray(fc.nat({ max: 3 }), { maxLength: 2 }),
              cap: fc.option(fc.nat({ max: 1 }), { nil: null }),
              scope: fc.option(fc.nat({ max: 1 }), { nil: null }),
            }),
          },
        ]
      : []),
  );
  return fc.record({
    start: fc.integer({ min: Date.UTC(2031, 0, 1), max: Date.UTC(2032, 0, 1) }),
    offsetMs: fc.constantFrom(0, 5 * 3_600_000, -330 * 60_000),
    ttlMs: fc.constantFrom(IDEMPOTENCY_TTL_MS, 3000, 90_000),
    budgets: fc.array(fc.record({ limit: fc.integer({ min: 1, max: 4 }), windowMs: fc.constantFrom(1000, 2000, 5000) }), { minLength: 4, maxLength: 4 }),
    capLimits: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 2, maxLength: 2 }),
    ops: fc.array(op, { minLength: 1, maxLength: maxSteps, size: "max" }),
  });
}
