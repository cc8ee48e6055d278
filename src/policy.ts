/**
 * The stateful way through: the same plan → charge → render as `evaluate`, with the counters in a
 * store (in memory, or shared through Redis) and time and ids from injected functions.
 */
import { resolveConfig, type CompiledConfig, type PolicyConfig, type PolicyOptions } from "./config.js";
import { PolicyConfigError } from "./errors.js";
import { assertCredential, assertNow, assertRoles, requestIdOf } from "./evaluate.js";
import { assertInsurance, insured, type Insurance } from "./insurance.js";
import { budgetCharges, chargeRequest, subjectOf } from "./keys.js";
import { applyLimits, type Limits } from "./limits.js";
import { MemoryStore } from "./memory-store.js";
import { plan, type Plan } from "./plan.js";
import { figures, render, storeFailed } from "./render.js";
import { assertTarget, resetRequest, type ResetTarget } from "./reset.js";
import type { ChargeOutcome, PolicyStore } from "./store.js";
import type { Credential, Decision, PolicyRequest, RateLimitStatus, ReleaseTicket, Who } from "./types.js";

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
  /**
   * When the main store fails, decide against this store instead, with every budget and cap limit
   * multiplied by `share` (rounded down) and `degraded: true` on the decision; the main store is
   * tried again on the next request. See docs/operating.md for 503 vs insurance vs fail-open.
   */
  insurance?: Insurance;
  /**
   * Told of every decision `check` makes (allowed, refused, degraded, replay), after it is made; for
   * metrics and logs. `decision.reason` says why. Runs synchronously on the request's path, so keep
   * it cheap (count, or hand to a logger). It cannot break a request: what it throws (or a promise it
   * returns rejects with) goes to `onHookError`.
   */
  onDecision?: (decision: Decision) => void;
  /**
   * Told when `onDecision` or `onStoreError` throws, with the error and the decision. Default:
   * the error is dropped; the request is answered as decided either way.
   */
  onHookError?: (error: unknown, decision: Decision) => void;
}

/**
 * Options of {@link Policy.status}.
 *
 * @example
 * const body = await policy.status(credential, { limits: PLANS.paid });
 */
export interface StatusOptions {
  /** The plan's limits, as passed to `check` in `who.limits`. Default: the config's. */
  limits?: Limits;
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
   * @throws PolicyConfigError for host mistakes only: a credential or roles that are not what they must be, a clock reading that is not a time a `Date` can hold.
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
   * Clears one credential's counters (its budget windows, today's test sends and its idempotency
   * records) or one newsletter's dispatch count for today; nothing else. In the main store and,
   * when there is one, the insurance store.
   *
   * @param target - `{ credential }` (`{ id, kind }` is enough) or `{ newsletter }`.
   * @returns when both stores have cleared.
   * @throws PolicyConfigError when the target is invalid or the store has no `reset`; rejects with
   *   the store's error when it fails.
   * @example
   * await policy.reset({ credential: { id: "key_1", kind: "api_key" } });
   * await policy.reset({ newsletter: "nl_1" });
   */
  reset(target: ResetTarget): Promise<void>;
  /**
   * The JSON body of `GET /rate-limit` (spec §4): every budget's limit, remaining and reset, the
   * same numbers the headers give. Reads without charging.
   *
   * @param credential - whose budgets.
   * @param options - `limits`: the plan's limits, as passed to `check` (default: the config's).
   * @returns `{ budgets: { general: { limit, remaining, reset }, audience: {…}, write: {…} } }`.
   * @example
   * if (decision.operation === "rateLimit.get") res.end(JSON.stringify(await policy.status(credential, { limits })));
   */
  status(credential: Credential, options?: StatusOptions): Promise<RateLimitStatus>;
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
 *   generateId (default random), failOpen (default false), onStoreError, insurance (default none),
 *   onDecision, onHookError.
 * @returns a {@link Policy} with `check`, `release`, `reset` and `status`.
 * @throws PolicyConfigError when the config or the insurance is invalid.
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
  const insurance = options.insurance === undefined ? undefined : assertInsurance(options.insurance);
  const { onDecision, onStoreError, onHookError } = options;
  /** Tickets of cap charges the insurance store made: their release goes there. */
  const insuredTickets = new WeakSet<ReleaseTicket>();

  function now(): number {
    const t = clock();
    assertNow(t, "clock()");
    return t;
  }

  /** Tells the host's error hook; if that throws too, there is nothing more to tell. */
  function report(error: unknown, decision: Decision): void {
    try {
      onHookError?.(error, decision);
    } catch {
      // dropped: a hook never breaks a request
    }
  }

  /** A host hook must not break the request it is told of: a throw or a rejection goes to onHookError. */
  function hook(run: () => unknown, decision: Decision): void {
    try {
      const result = run();
      if (typeof (result as Promise<unknown> | undefined)?.then === "function") {
        (result as Promise<unknown>).then(undefined, (error: unknown) => report(error, decision));
      }
    } catch (error) {
      report(error, decision);
    }
  }

  /** The insurance store decides, with every limit × share; the main store is tried again next time. */
  async function degraded(
    insurance: Insurance,
    request: unknown,
    who: Who,
    effective: CompiledConfig,
    subject: string,
    t: number,
    requestId: string,
    planned: Plan,
    error: unknown,
  ): Promise<Decision> {
    const scaled = insured(effective, insurance.share);
    const replanned = plan(scaled, request, who.credential, who.roles);
    const charge = chargeRequest(replanned, subject, scaled, t, requestId);
    let outcome: ChargeOutcome;
    try {
      outcome = await insurance.store.charge(charge);
    } catch (second) {
      return storeFailed(planned, effective, t, requestId, `${describe(error)}; insurance store: ${describe(second)}`, failOpen);
    }
    const decision = render(replanned, charge, outcome, scaled, outcome.now ?? t, requestId);
    decision.degraded = true;
    if (decision.release !== undefined) insuredTickets.add(decision.release);
    return decision;
  }

  function decided(decision: Decision): Decision {
    if (onDecision !== undefined) hook(() => onDecision(decision), decision);
    return decision;
  }

  return {
    config: config.settings,
    async check(request, who) {
      assertCredential(who?.credential);
      assertRoles(who.roles);
      const t = now();
      const { credential } = who;
      const effective = applyLimits(config, who.limits, "who.limits");
      const planned = plan(effective, request, credential, who.roles);
      const requestId = requestIdOf(planned.requestId, generateId);
      const subject = subjectOf(credential);
      const charge = chargeRequest(planned, subject, effective, t, requestId);
      let outcome: ChargeOutcome;
      try {
        outcome = await store.charge(charge);
      } catch (error) {
        let decision: Decision;
        if (insurance === undefined) {
          decision = storeFailed(planned, effective, t, requestId, describe(error), failOpen);
        } else {
          decision = await degraded(insurance, request, who, effective, subject, t, requestId, planned, error);
        }
        if (onStoreError !== undefined) hook(() => onStoreError(error, decision), decision);
        return decided(decision);
      }
      return decided(render(planned, charge, outcome, effective, outcome.now ?? t, requestId));
    },
    async release(decision) {
      if (decision?.release === undefined) return false;
      const target = insurance !== undefined && insuredTickets.has(decision.release) ? insurance.store : store;
      return target.release(decision.release, now());
    },
    async reset(target) {
      assertTarget(target, "target");
      const t = now();
      const request = resetRequest(target, config, t);
      const stores = insurance === undefined ? [store] : [store, insurance.store];
      for (const s of stores) {
        if (typeof s.reset !== "function") {
          throw new PolicyConfigError(s === store ? "store.reset" : "insurance.store.reset", "is missing: this store cannot reset counters (MemoryStore and RedisStore can)");
        }
      }
      const results = await Promise.allSettled(stores.map((s) => s.reset!(request, t)));
      const failed = results.find((r) => r.status === "rejected");
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    },
    async status(credential, statusOptions) {
      assertCredential(credential);
      const effective = applyLimits(config, statusOptions?.limits, "limits");
      const t = now();
      const subject = subjectOf(credential);
      let budgets = effective.budgets;
      let readings;
      try {
        readings = await store.read(budgetCharges(subject, budgets), t);
      } catch (error) {
        if (insurance === undefined) throw error;
        budgets = insured(effective, insurance.share).budgets;
        readings = await insurance.store.read(budgetCharges(subject, budgets), t);
      }
      const out: RateLimitStatus["budgets"] = {};
      budgets.forEach((b, i) => {
        out[b.name] = figures(b, readings[i]!, t);
      });
      return { budgets: out };
    },
  };
}
