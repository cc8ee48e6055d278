/**
 * The stateful way through: the same plan → charge → render as `evaluate`, with the counters in a
 * store (in memory, or shared through Redis) and time and ids from injected functions.
 */
import { resolveConfig, type PolicyConfig, type PolicyOptions } from "./config.js";
import { assertCredential, assertNow, assertRoles, requestIdOf } from "./evaluate.js";
import { budgetCharges, chargeRequest, subjectOf } from "./keys.js";
import { MemoryStore } from "./memory-store.js";
import { plan } from "./plan.js";
import { figures, render, storeFailed } from "./render.js";
import type { ChargeOutcome, PolicyStore } from "./store.js";
import type { Credential, Decision, PolicyRequest, RateLimitStatus, Who } from "./types.js";

/** Options of {@link createPolicy}. */
export interface CreatePolicyOptions {
  /** Where counters live. Default: a new {@link MemoryStore}. */
  store?: PolicyStore;
  /** Default: the spec's numbers. */
  config?: PolicyConfig | PolicyOptions;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: () => number;
  /** Request ids when the request carries none (`req_` is prefixed). Default: random UUIDs. */
  generateId?: () => string;
  /** Let requests through, uncounted, when the store fails. Default false: 503 `service_unavailable`. */
  failOpen?: boolean;
  /** Told of every store failure, with the decision made instead; for logs and metrics. */
  onStoreError?: (error: unknown, decision: Decision) => void;
}

/** A policy over a store: what {@link createPolicy} returns. */
export interface Policy {
  /**
   * Decides one request and charges it, all or nothing (plan → charge → render).
   *
   * @param request - the {@link PolicyRequest} built from the HTTP request. Typed, and still validated
   *   at run time: it is untrusted, so any shape (even one the types forbid) is answered, a malformed
   *   one with 400 `invalid_request`, never thrown.
   * @param who - the credential and its owner's current roles, from the host's authentication.
   * @returns the decision: set `headers` on every response; when `allowed` is false answer with
   *   `status` and `body`. Never rejects for a refusal; a store failure is a 503 decision (or fails open).
   * @throws PolicyConfigError for host mistakes only: a credential or roles that are not what they must be, a clock that is not finite.
   * @example
   * const decision = await policy.check({ method: "GET", path: "/newsletters/nl_1/subscribers?limit=100" }, { credential, roles: { nl_1: "owner" } });
   * if (!decision.allowed) return reply(decision.status, decision.headers, decision.body);
   */
  check(request: PolicyRequest, who: Who): Promise<Decision>;
  /**
   * Uncounts the daily-cap charge of an allowed send, schedule or test send that then failed
   * downstream (spec §8: a refused send counts for nothing). Releasing twice uncounts once.
   *
   * @param decision - the allowed decision (its `release` ticket); any other decision is a no-op.
   * @returns true when the charge was still counted and is now released.
   * @example
   * try { await deliver(article); } catch (error) { await policy.release(decision); throw error; }
   */
  release(decision: Pick<Decision, "release">): Promise<boolean>;
  /**
   * The JSON body of `GET /rate-limit` (spec §4): every budget's limit, remaining and reset, the
   * same numbers the headers give. Reads without charging.
   *
   * @param credential - whose budgets.
   * @returns `{ budgets: { general: { limit, remaining, reset }, audience: {…}, write: {…} } }`.
   * @example
   * if (decision.operation === "rateLimit.get") res.end(JSON.stringify(await policy.status(credential)));
   */
  status(credential: Credential): Promise<RateLimitStatus>;
  /** The validated config the policy decides with. */
  readonly config: PolicyConfig;
}

function randomId(): string {
  // the Web Crypto global (Node 20+, Deno, Bun, workers): the main entry imports no node: module
  return globalThis.crypto.randomUUID().replaceAll("-", "");
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * Makes a policy over a store, for middleware.
 *
 * @param options - store (default MemoryStore), config (default the spec), clock (default Date.now),
 *   generateId (default random), failOpen (default false), onStoreError.
 * @returns a {@link Policy} with `check`, `release` and `status`.
 * @throws PolicyConfigError when the config is invalid.
 * @example
 * const policy = createPolicy({ store: new MemoryStore(), config: { docsUrl: "https://api.example.com/docs/errors" } });
 * const decision = await policy.check(
 *   { method: "POST", path: "/articles/a_1/send", newsletter: "nl_1", idempotencyKey: "send-a_1", body },
 *   { credential, roles },
 * );
 * if (!decision.allowed) return res.writeHead(decision.status, decision.headers).end(JSON.stringify(decision.body));
 */
export function createPolicy(options: CreatePolicyOptions = {}): Policy {
  const config = resolveConfig(options.config);
  const store = options.store ?? new MemoryStore();
  const clock = options.clock ?? Date.now;
  const generateId = options.generateId ?? randomId;
  const failOpen = options.failOpen === true;

  function now(): number {
    const t = clock();
    assertNow(t, "clock()");
    return t;
  }

  return {
    config: config.settings,
    async check(request, who) {
      assertCredential(who?.credential);
      assertRoles(who.roles);
      const t = now();
      const { credential } = who;
      const planned = plan(config, request, credential, who.roles);
      const requestId = requestIdOf(planned.requestId, generateId);
      const subject = subjectOf(credential);
      const charge = chargeRequest(planned, subject, config, t, requestId);
      let outcome: ChargeOutcome;
      try {
        outcome = await store.charge(charge);
      } catch (error) {
        const decision = storeFailed(planned, config, t, requestId, describe(error), failOpen);
        options.onStoreError?.(error, decision);
        return decision;
      }
      return render(planned, charge, outcome, config, outcome.now ?? t, requestId);
    },
    async release(decision) {
      if (decision?.release === undefined) return false;
      return store.release(decision.release, now());
    },
    async status(credential) {
      assertCredential(credential);
      const t = now();
      const readings = await store.read(budgetCharges(subjectOf(credential), config.budgets), t);
      const budgets: RateLimitStatus["budgets"] = {};
      config.budgets.forEach((b, i) => {
        budgets[b.name] = figures(b, readings[i]!, t);
      });
      return { budgets };
    },
  };
}
