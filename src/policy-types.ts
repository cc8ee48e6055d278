/**
 * The public shapes of the stateful API: the options of `createPolicy` and the {@link Policy} it
 * returns (policy.ts builds it).
 */
import type { PolicyConfig } from "./config.js";
import type { PolicyOptions } from "./config-types.js";
import type { Insurance } from "./insurance.js";
import type { Limits } from "./types.js";
import type { ResetTarget } from "./reset.js";
import type { PolicyStore } from "./store.js";
import type { Credential, Decision, PolicyRequest, RateLimitStatus, Who } from "./types.js";

/** Options of {@link createPolicy}. */
export interface CreatePolicyOptions {
  /** Where counters live. Default: a new {@link MemoryStore}. */
  store?: PolicyStore;
  /** Default: the spec's numbers. */
  config?: PolicyConfig | PolicyOptions;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: () => number;
  /**
   * Request ids when the request carries none (`req_` is prefixed, unless the id starts with it).
   * Must return 1 to 128 characters of `A-Z a-z 0-9 . _ : -` (the id goes into `request_id` and
   * headers); another value, or a throw, is a `PolicyConfigError` naming `generateId()`. Default: a
   * random per-process prefix and a counter (unique across processes, not secret).
   */
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
   * Decides one request and charges it, all or nothing (plan → charge → decide → render).
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
