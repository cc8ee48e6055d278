/**
 * The arbitrary of whole traces: several credentials making hundreds of requests while the clock
 * moves, roles change mid-trace, sends are released and `GET /rate-limit` is read.
 */
import fc from "fast-check";
import type { PolicyOptions } from "../../config-types.js";
import type { Credential, Grants, PolicyRequest } from "../../types.js";
import { PolicyConfigError } from "../../errors.js";
import { arbConfig } from "./config.js";
import { arbCredential, arbRoleName, arbRoles, own } from "./credentials.js";
import { arbRequest } from "./requests.js";
import { NEWSLETTER_IDS } from "./vocabulary.js";

/** One step of a {@link Trace}. A `credential` index is taken modulo the number of credentials. */
export type TraceStep =
  /** The credential at `credential` (index into `Trace.credentials`) makes a request. */
  | { readonly kind: "request"; readonly credential: number; readonly request: PolicyRequest; readonly operation: string | undefined }
  /** The clock moves forward. */
  | { readonly kind: "advance"; readonly ms: number }
  /** The credential owner's role on a newsletter changes (`undefined`: the role is taken away). */
  | { readonly kind: "role"; readonly credential: number; readonly newsletter: string; readonly role: string | undefined }
  /** Release the cap charge of an earlier allowed send: the `pick`-th (mod count) decision that carries a ticket. */
  | { readonly kind: "release"; readonly pick: number }
  /** Read `GET /rate-limit` figures of a credential (stateful policies only; a no-op for the pure API). */
  | { readonly kind: "status"; readonly credential: number };

/** A whole session: config, start time, credentials with their owners' roles, and the steps. */
export interface Trace {
  readonly config: PolicyOptions;
  /** Milliseconds since the epoch at the first step. */
  readonly start: number;
  /** Distinct ids. */
  readonly credentials: readonly Credential[];
  /** `roles[i]`: the current roles of `credentials[i]`'s owner when the trace starts. */
  readonly roles: readonly Readonly<Record<string, string>>[];
  readonly steps: readonly TraceStep[];
}

/** Options of {@link arbTrace}. */
export interface TraceArbitraryOptions {
  /**
   * Fewest and most steps: whole numbers, `minSteps` ≤ `maxSteps`. Default 1 to 300 (lengths drawn
   * across the whole range; a failing trace shrinks to the few steps it needs).
   */
  minSteps?: number;
  maxSteps?: number;
  /** Most credentials. Default 3. */
  maxCredentials?: number;
  /** The config. Default {@link arbConfig}. */
  config?: fc.Arbitrary<PolicyOptions>;
  /**
   * `caps`: roomy budgets, every granted newsletter grants `sending: write`, and half the requests
   * well formed (arbRequest's `wellFormed`), so that traces reach both daily caps.
   */
  focus?: "caps";
  /** Earliest and latest start. Default 2026-01-01 to 2030-01-01 UTC. */
  startMin?: number;
  startMax?: number;
}

/**
 * A trace: several credentials making hundreds of requests while the clock moves (by milliseconds,
 * by whole windows, by hours across day boundaries), roles change mid-trace, sends are released and
 * `GET /rate-limit` is read.
 *
 * @param options - `minSteps`/`maxSteps` (default 1/300), `maxCredentials` (default 3), `config`, `focus`, start range.
 * @returns an arbitrary of {@link Trace}.
 * @throws PolicyConfigError when `minSteps` or `maxSteps` is not a whole number, or `minSteps` > `maxSteps`.
 * @example
 * await fc.assert(fc.asyncProperty(arbTrace(), async (trace) => {
 *   const log = await runPolicyTrace(trace, new MemoryStore());
 *   return log.every((entry) => entry.kind !== "request" || entry.decision.headers["RateLimit-Limit"] !== undefined);
 * }));
 */
export function arbTrace(options: TraceArbitraryOptions = {}): fc.Arbitrary<Trace> {
  const maxSteps = options.maxSteps ?? 300;
  const minSteps = options.minSteps ?? Math.min(1, maxSteps);
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 0) throw new PolicyConfigError("maxSteps", `must be a whole number ≥ 0; got ${String(maxSteps)}`);
  if (!Number.isSafeInteger(minSteps) || minSteps < 0 || minSteps > maxSteps) throw new PolicyConfigError("minSteps", `must be a whole number from 0 to maxSteps (${maxSteps}); got ${String(minSteps)}`);
  const maxCredentials = Math.max(1, options.maxCredentials ?? 3);
  const ids = Array.from({ length: maxCredentials }, (_, i) => `key_${i + 1}`);
  const sender = (grants: Grants): Grants => (options.focus === "caps" ? { ...grants, sending: "write" } : grants);
  const who = fc.nat({ max: maxCredentials - 1 });
  // focus caps: half the requests pass the input checks, so that sends and test sends reach the caps
  const requests = options.focus === "caps" ? fc.oneof(arbRequest({ wellFormed: true }), arbRequest()) : arbRequest();
  const step: fc.Arbitrary<TraceStep> = fc.oneof(
    { weight: 24, arbitrary: fc.tuple(who, requests).map(([credential, g]): TraceStep => ({ kind: "request", credential, request: g.request, operation: g.operation })) },
    {
      weight: 8,
      arbitrary: fc
        .oneof(
          { weight: 12, arbitrary: fc.integer({ min: 0, max: 1500 }) },
          { weight: 4, arbitrary: fc.integer({ min: 1, max: 6 }).map((s) => s * 1000) },
          { weight: 1, arbitrary: fc.integer({ min: 1, max: 14 }).map((h) => h * 3_600_000 + 17) },
        )
        .map((ms): TraceStep => ({ kind: "advance", ms })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(who, fc.constantFrom(...NEWSLETTER_IDS), fc.option(arbRoleName(), { nil: undefined, freq: 6 }))
        .map(([credential, newsletter, role]): TraceStep => ({ kind: "role", credential, newsletter, role })),
    },
    { weight: 1, arbitrary: fc.nat().map((pick): TraceStep => ({ kind: "release", pick })) },
    { weight: 1, arbitrary: who.map((credential): TraceStep => ({ kind: "status", credential })) },
  );
  // No chain: every part shrinks on its own, so counterexamples come out small.
  return fc
    .record({
      config: options.config ?? arbConfig(options.focus === "caps" ? { budgets: "roomy" } : {}),
      start: fc.integer({ min: options.startMin ?? Date.UTC(2026, 0, 1), max: options.startMax ?? Date.UTC(2030, 0, 1) }),
      people: fc.array(fc.tuple(arbCredential(), arbRoles()), { minLength: 1, maxLength: maxCredentials }),
      steps: fc.array(step, { minLength: minSteps, maxLength: maxSteps, size: "max" }),
    })
    .map(({ config, start, people, steps }): Trace => ({
      config,
      start,
      credentials: people.map(([credential], i) => ({
        ...credential,
        id: ids[i]!,
        newsletters: own(Object.entries(credential.newsletters).map(([n, g]) => [n, sender(g)] as const)),
      })),
      roles: people.map(([, roles]) => roles),
      steps,
    }));
}
