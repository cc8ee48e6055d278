/**
 * `describeStoreConformance`: a vitest suite that any {@link PolicyStore} runs to prove it behaves
 * like `MemoryStore`, the reference model. Scripted cases pin each rule of the store contract with
 * literal expectations; two differential properties then drive the store and a `MemoryStore`
 * through the same random `ChargeRequest` programs, and the same random policy traces through
 * `createPolicy`, and compare every outcome.
 */
import { PolicyConfigError } from "../errors.js";
import { afterEach, describe, it } from "./vitest-api.js";
import type { PolicyStore } from "../store.js";
import { budgetCases } from "./conformance/budgets.js";
import { capCases } from "./conformance/caps.js";
import { concurrencyCases } from "./conformance/concurrency.js";
import { describeDifferentials } from "./conformance/differential.js";
import { idempotencyCases } from "./conformance/idempotency.js";
import { kit } from "./conformance/kit.js";
import { lateCases } from "./conformance/late.js";
import { resetCases } from "./conformance/reset.js";
import { specSizeCases } from "./conformance/spec-sizes.js";
import { expectNoLateCalls } from "./conformance/store-calls.js";

export { comparableDecision, comparableOutcome, type ComparableOutcome } from "./conformance/comparable.js";

/** Makes a fresh store for one test (or one property run); may be async. */
export type StoreFactory<S extends PolicyStore = PolicyStore> = () => S | Promise<S>;

/** Options of {@link describeStoreConformance}. */
export interface StoreConformanceOptions<S extends PolicyStore = PolicyStore> {
  /** Called with every store the suite made, once the test or property run is done (close connections, flush keys). */
  cleanup?: (store: S) => void | Promise<void>;
  /** Runs of each differential property. Default 50. */
  numRuns?: number;
  /** fast-check seed, for reproducible runs. Default: fast-check's (random). */
  seed?: number;
  /** Steps per random program or trace, at most. Default 150. */
  maxSteps?: number;
  /** Time of the scripted cases (ms since the epoch). Default 2031-05-14 09:00 UTC. */
  startTime?: number;
  /** Per-test timeout (ms). Default 120 000. */
  timeout?: number;
  /** Run the `reset` cases (and reset steps in the random programs). Default true; false for a store without `reset`. */
  reset?: boolean;
  /**
   * A store that can be made to answer a charge too late, for the cases of `ChargeRequest.late`
   * (DESIGN §12). `makeStore` makes one (with a short deadline and no retries, say); `arm(store)`
   * makes its next charge (or the charges of the next turn, sent together) be made by its backend
   * but answered after the store gives up (a reply held back past the deadline; on Redis Cluster,
   * a send's step 2). The suite then checks that the store throws, and hands each such charge's
   * own outcome to its `late` once, with a member that releases the cap place and a `now` that
   * finds the record to `forget`. Without it those cases are not run; every case still checks
   * that a store never calls `late` of a charge it answered.
   */
  lateReplies?: {
    makeStore: StoreFactory<S>;
    arm: (store: S) => void | Promise<void>;
    /** How long a case waits for the store to call `late` once it threw (ms). Default 10 000. */
    waitMs?: number;
  };
}

/**
 * Declares a vitest suite that proves a {@link PolicyStore} behaves like `MemoryStore`: budgets
 * (fixed windows, all or nothing, a refusal charging nothing), the spec's sizes (budgets of 600 and
 * 60 a minute, an hour's window, caps of 25 and 50 a day), windows rolling over, refused
 * requests, idempotency (replay, conflict, expiry), daily caps (per key and day), release
 * (once only, and the key counts again), `read()`, `reset()` (unless `reset: false`), concurrent
 * charges, `ChargeRequest.late` (never called for a charge the store answered; with
 * `lateReplies`, called once for one it gave up on but made), and two differential properties
 * against `MemoryStore`.
 *
 * The store must decide with the times the suite passes (`ChargeRequest.now`, and `now` of
 * `release` and `read`); a store that reads its own clock must be run in a mode that uses the
 * request's time. A store may report `ChargeOutcome.now`; it must then equal the request's.
 * Keys are namespaced per test, so a shared backend works, but a fresh one per call is simplest.
 *
 * @param name - shown in the suite's title.
 * @param makeStore - a fresh store per test and per property run; may be async.
 * @param options - `cleanup` hook, `numRuns` (default 50), `seed`, `maxSteps` (default 150), `startTime`, `timeout`, `reset`, `lateReplies`.
 * @example
 * // test/redis-store.test.ts
 * import { Redis } from "ioredis";
 * import { describeStoreConformance } from "newsletter-policy/testing";
 * import { RedisStore } from "newsletter-policy/redis";
 *
 * const redis = new Redis();
 * let n = 0;
 * describeStoreConformance("RedisStore", () => new RedisStore({ redis: (c, a) => redis.call(c, a), prefix: `conformance:${++n}:` }), {
 *   cleanup: async () => { const keys = await redis.keys("conformance:*"); if (keys.length) await redis.del(...keys); },
 *   numRuns: 30,
 *   seed: 42,
 * });
 */
export function describeStoreConformance<S extends PolicyStore>(name: string, makeStore: StoreFactory<S>, options: StoreConformanceOptions<S> = {}): void {
  for (const field of ["maxSteps", "numRuns"] as const) {
    const value = options[field];
    // a host mistake named here, when the suite is declared, not as fast-check's error inside a property
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 1)) throw new PolicyConfigError(field, `must be a whole number ≥ 1; got ${String(value)}`);
  }
  const late = options.lateReplies;
  if (late !== undefined && (typeof late !== "object" || late === null || typeof late.makeStore !== "function" || typeof late.arm !== "function" || (late.waitMs !== undefined && !(Number.isFinite(late.waitMs) && late.waitMs >= 0)))) {
    throw new PolicyConfigError("lateReplies", "must be { makeStore, arm, waitMs? }: a function that makes a store, one that makes that store's next charge answer after it gives up, and a wait of 0 ms or more");
  }
  const start = options.startTime ?? Date.UTC(2031, 4, 14, 9, 0, 0);
  const timeout = options.timeout ?? 120_000;
  const resets = options.reset !== false;
  const cases = [...budgetCases, ...specSizeCases, ...idempotencyCases, ...capCases, ...concurrencyCases, ...(resets ? resetCases : [])];
  const made: S[] = [];
  let suite = 0;

  async function fresh(make: StoreFactory<S> = makeStore): Promise<S> {
    const store = await make();
    made.push(store);
    return store;
  }

  describe(`PolicyStore conformance: ${name}`, () => {
    afterEach(async () => {
      const stores = made.splice(0);
      if (options.cleanup) for (const store of stores) await options.cleanup(store);
    });

    for (const { title, run } of cases) {
      it(title, async () => {
        const store = await fresh();
        await run(store, kit(start, `conf${++suite}:`));
        await expectNoLateCalls(store);
      }, timeout);
    }

    if (late !== undefined) {
      for (const { title, run } of lateCases) {
        it(title, async () => {
          const store = await fresh(late.makeStore);
          await run(store, kit(start, `conf${++suite}:`), { arm: async () => void (await late.arm(store)), waitMs: late.waitMs ?? 10_000 });
          await expectNoLateCalls(store);
        }, timeout);
      }
    }

    describeDifferentials({
      fresh,
      nextPrefix: () => `diff${++suite}:`,
      numRuns: options.numRuns ?? 50,
      seed: options.seed,
      maxSteps: options.maxSteps ?? 150,
      resets,
      timeout,
    });
  });
}
