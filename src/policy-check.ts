/**
 * `policy.check`: one request through plan → charge (the store) → decide → render, and what happens
 * when the store fails: the insurance store decides instead, or decide.ts answers without counters.
 */
import { chargeRequest, lateChargeOf } from "./charge-request.js";
import type { CompiledConfig } from "./config.js";
import type { Hooks } from "./hooks.js";
import { describeThrown } from "./errors.js";
import { assertCredential, assertNoMisspelt, assertRoles } from "./host-input.js";
import { insured, insuredTicket, type Insurance } from "./insurance.js";
import { applyLimits } from "./limits.js";
import { plan, type Plan } from "./plan.js";
import { present } from "./render.js";
import { readDescriptor, type DescriptorRead } from "./request.js";
import { MemoryStore } from "./memory-store.js";
import { isThenable } from "./thenable.js";
import { checkedOutcome, type ChargeOutcome, type ChargeRequest, type PolicyStore } from "./store.js";
import { subjectKeysOf } from "./store-keys.js";
import type { Decision, PolicyRequest, Who } from "./types.js";

/** What a policy made of its options, shared by its methods. */
export interface PolicyContext {
  readonly config: CompiledConfig;
  readonly store: PolicyStore;
  /** The clock, checked: a reading that is not a time throws PolicyConfigError. */
  readonly now: () => number;
  /** The request id of a decision: the host's (`requestId`), or one from the policy's `generateId` (`requestIds`). */
  readonly requestId: (given: string | undefined) => string;
  readonly failOpen: boolean;
  readonly insurance: Insurance | undefined;
  readonly hooks: Hooks;
}

/** What the main store was asked when it failed, and how. */
interface Failed {
  readonly planned: Plan;
  readonly charge: ChargeRequest;
  readonly error: unknown;
}

/**
 * The answer without counters (DESIGN §12) to the request the main store failed on: 503, or with
 * `failOpen` the plan's own answer uncounted; `why` follows the main store's error in its reason.
 */
function unavailable(first: Failed, why: string, failOpen: boolean, config: CompiledConfig, t: number, requestId: string, degraded = false): Decision {
  const error = why === "" ? describeThrown(first.error) : `${describeThrown(first.error)}; insurance store: ${why}`;
  return present(first.planned, first.charge, { kind: "store_failed", error, failOpen }, config, t, requestId, degraded);
}

/** The insurance store decides, with every limit × share; the main store is tried again next time. */
async function insuredAnswer(ctx: PolicyContext, insurance: Insurance, read: DescriptorRead, who: Who, config: CompiledConfig, t: number, requestId: string, first: Failed): Promise<Decision> {
  // a write with an Idempotency-Key is not decided here: this store cannot know whether the main
  // store holds the key (a retried send would be sent again, not replayed), nor the main store, once
  // back, of a key recorded here (DESIGN §7). Refused, and never failed open: failOpen is for when
  // the insurance store fails too, and a client that adds a key would otherwise pass every limit
  // uncounted while the main store is down (found by a review of this change).
  if (first.charge.idempotency !== undefined) return unavailable(first, "not asked (a write with an Idempotency-Key is decided by the main store only)", false, config, t, requestId);
  const scaled = insured(config, insurance.share);
  // the same read of the descriptor as the first plan's: an untrusted object is read once
  const replanned = plan(scaled, read, who.credential, who.roles);
  const charge = chargeRequest(replanned, subjectKeysOf(who.credential), scaled, t, requestId);
  let outcome: ChargeOutcome;
  try {
    outcome = checkedOutcome(charge, await insurance.store.charge(charge));
  } catch (second) {
    return unavailable(first, describeThrown(second), ctx.failOpen, config, t, requestId);
  }
  // this process's share of a daily cap is spent, not the cap: a 429 would show the share as the
  // client's daily limit and send it away until tomorrow. The main store is needed to decide: 503.
  if (outcome.kind === "cap_reached") return unavailable(first, `this process's share of the daily ${charge.cap?.name ?? ""} cap is spent`, false, config, t, requestId, true);
  const decision = present(replanned, charge, outcome, scaled, t, requestId, true);
  return decision.release === undefined ? decision : { ...decision, release: insuredTicket(decision.release) };
}

/** The main store failed: the insurance store decides, or the policy answers without counters (DESIGN §12). */
async function failed(ctx: PolicyContext, read: DescriptorRead, who: Who, config: CompiledConfig, t: number, requestId: string, first: Failed): Promise<Decision> {
  const decision = ctx.insurance === undefined ? unavailable(first, "", ctx.failOpen, config, t, requestId) : await insuredAnswer(ctx, ctx.insurance, read, who, config, t, requestId, first);
  ctx.hooks.storeFailed(first.error, decision);
  lateChargeOf(first.charge)?.answered(decision);
  return ctx.hooks.decided(decision);
}

const WHO_FIELDS = ["credential", "roles", "limits"] as const;

/** `MemoryStore`'s charge, as the class defines it (a subclass or an instance that replaces it is checked as any store is). */
const OWN_CHARGE = MemoryStore.prototype.charge;

/**
 * `policy.check`: see `Policy.check`. Not an `async` function: a store that answers synchronously
 * (MemoryStore) is answered without one (an async function's frame, kept for an await it never
 * makes, was a sixth of what a check allocated); a host mistake still rejects, never throws.
 */
export function check(ctx: PolicyContext, request: PolicyRequest, who: Who): Promise<Decision> {
  try {
    return Promise.resolve(decideNow(ctx, request, who));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** A check up to its store's answer: the decision when the store answered synchronously, else the promise of it. */
function decideNow(ctx: PolicyContext, request: PolicyRequest, who: Who): Decision | Promise<Decision> {
  assertCredential(who?.credential);
  assertRoles(who.roles);
  assertNoMisspelt(who, "who", WHO_FIELDS);
  const t = ctx.now();
  const config = applyLimits(ctx.config, who.limits, "who.limits");
  // read once, into plain values: the insurance path plans again from the same read
  const read = readDescriptor(request);
  const planned = plan(config, read, who.credential, who.roles);
  const requestId = ctx.requestId(planned.requestId);
  const charge = chargeRequest(planned, subjectKeysOf(who.credential), config, t, requestId, ctx.store);
  let outcome: ChargeOutcome;
  try {
    const store = ctx.store;
    const pending = store.charge(charge);
    // a store that answers later (Redis) is awaited; one that answers synchronously is not made to
    // wait a microtask turn, and the built-in MemoryStore's own charge answers what runCharge built,
    // so only other answers are checked
    if (isThenable(pending)) return answered(ctx, read, who, config, t, requestId, planned, charge, pending);
    outcome = store.charge === OWN_CHARGE ? pending : checkedOutcome(charge, pending);
  } catch (error) {
    return failed(ctx, read, who, config, t, requestId, { planned, charge, error });
  }
  return ctx.hooks.decided(present(planned, charge, outcome, config, t, requestId));
}

/** The decision once a store that answers later has answered (or failed). */
async function answered(ctx: PolicyContext, read: DescriptorRead, who: Who, config: CompiledConfig, t: number, requestId: string, planned: Plan, charge: ChargeRequest, pending: PromiseLike<ChargeOutcome>): Promise<Decision> {
  let outcome: ChargeOutcome;
  try {
    outcome = checkedOutcome(charge, await pending);
  } catch (error) {
    return failed(ctx, read, who, config, t, requestId, { planned, charge, error });
  }
  return ctx.hooks.decided(present(planned, charge, outcome, config, t, requestId));
}
