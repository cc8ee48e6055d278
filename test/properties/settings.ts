/**
 * One place for how hard the properties try. CI: a fixed seed and enough runs to matter, the whole
 * property suite well under a minute on 2 cores. `npm run test:deep` (NP_DEEP=1): many more runs,
 * and a seed from the environment (NP_SEED) or a fresh one, printed so a failure can be replayed.
 */
import type { Parameters } from "fast-check";

/** NP_DEEP=1: the deep run. */
export const DEEP = process.env.NP_DEEP === "1";

/** The seed: NP_SEED when given; CI's fixed seed; a fresh one for deep runs. */
export const SEED = process.env.NP_SEED !== undefined ? Number(process.env.NP_SEED) : DEEP ? Date.now() % 2 ** 31 : 20261122;

/** How many runs a property gets: `weight` scales it for cheap (several) or expensive (fractions) properties. */
export function runs(weight = 1): number {
  return Math.max(1, Math.round((DEEP ? 1000 : 60) * weight));
}

/** fast-check parameters for one property. */
export function params<T>(weight = 1, extra: Parameters<T> = {}): Parameters<T> {
  return { seed: SEED, numRuns: runs(weight), ...extra };
}

/**
 * Steps per trace: up to 400 (three in four of them requests; see docs/guarantees.md for the measured spread). No minimum,
 * so that fast-check can shrink a failing trace down to the few steps that matter.
 */
export const TRACE = { minSteps: 0, maxSteps: 400 } as const;

/** The test timeout for property tests (never an assertion on time; only a guard against hangs). */
export const TIMEOUT = DEEP ? 3_600_000 : 120_000;

if (DEEP) console.log(`[properties] deep run: seed ${SEED}, ${runs()} runs per property (NP_SEED=${SEED} replays it)`);
