/** The arbitrary of policy options: small budgets and caps, an extra role, host operations and odd day starts. */
import fc from "fast-check";
import type { PolicyOptions } from "../../config-types.js";
import { arbGrants } from "./credentials.js";
import { EXTRA_OPERATIONS } from "./vocabulary.js";

/** Options of {@link arbConfig}. */
export interface ConfigArbitraryOptions {
  /**
   * `tight` (default): a few requests per few seconds, so that traces spend budgets; `roomy`: 60 to
   * 1 000 requests per window of 1 to 60 seconds, each budget drawn on its own (room for long traces,
   * the spec's 600 and 60 a minute among them; not every budget at the spec's size or more).
   */
  budgets?: "tight" | "roomy";
  /** `tight` (default): daily caps of 1 to 4, so that traces reach them; `roomy`: up to the spec's 25 and 50. */
  caps?: "tight" | "roomy";
}

/**
 * Policy options: small budgets (so that traces spend them), small daily caps, an `analyst` role
 * with random caps, a host budget `exports`, the operations of {@link EXTRA_OPERATIONS}, either
 * unit for daily `Retry-After`, and a day start away from midnight UTC.
 *
 * @param options - `budgets` and `caps`: `tight` (default) or `roomy`.
 * @returns an arbitrary of {@link PolicyOptions}, always valid for `defineConfig`.
 * @example
 * fc.assert(fc.property(arbConfig(), (options) => Object.keys(defineConfig(options).budgets).length === 4));
 */
export function arbConfig(options: ConfigArbitraryOptions = {}): fc.Arbitrary<PolicyOptions> {
  const tight = options.budgets !== "roomy";
  const tightCaps = options.caps !== "roomy";
  const budget = (max: number) =>
    tight
      ? fc.record({ limit: fc.integer({ min: 1, max }), window: fc.integer({ min: 1, max: 4 }) })
      : fc.record({ limit: fc.integer({ min: 60, max: 1000 }), window: fc.integer({ min: 1, max: 60 }) });
  return fc.record({
    budgets: fc.record({ general: budget(50), audience: budget(8), write: budget(16), exports: budget(3) }),
    caps: fc.record({
      dispatch: fc.record({ limit: fc.integer({ min: 1, max: tightCaps ? 4 : 25 }) }),
      testSend: fc.record({ limit: fc.integer({ min: 1, max: tightCaps ? 4 : 50 }) }),
    }),
    roles: fc.record({ analyst: arbGrants() }),
    docsUrl: fc.constantFrom("https://docs.example.com/errors", "https://docs.newsletter.test/api/errors/"),
    dailyRetryAfter: fc.constantFrom<"hours" | "seconds">("hours", "seconds"),
    dayStartsAtUtcOffsetMinutes: fc.constantFrom(0, 0, 60, -300, 330, 1439, -1439),
    operations: fc.constant([...EXTRA_OPERATIONS]),
  });
}
