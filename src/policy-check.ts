/**
 * `policy.check`: one request through plan → charge (the store) → decide → render, and what happens
 * when the store fails: the insurance store decides instead, or decide.ts answers without counters.
 */
import { chargeRequest } from "./charge-request.js";
import type { CompiledConfig } from "./config.js";
import type { StoreResult } from "./decide.js";
import type { Hooks } from "./hooks.js";
import { assertCredential, assertRoles } from "./host-input.js";
import { insured, type Insurance } from "./insurance.js";
import { applyLimits } from "./limits.js";
import { plan, type Plan } from "./plan.js";
import { present } from "./render.js";
import { readDescriptor, type DescriptorRead } from "./request.js";
import { isThenable } from "./thenable.js";
import type { ChargeOutcome, ChargeRequest, PolicyStore } from "./store.js";
import { subjectKeysOf } from "./store-keys.js";
import type { Decision, PolicyRequest, ReleaseTicket, Who } from "./types.js";

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
  /** Tickets of cap charges the insurance store made: their release goes there. */
  readonly insuredTickets: WeakSet<ReleaseTicket>;
}

/** One request's way through, as far as the store. */
interface Asked {
  readonly planned: Plan;
  readonly charge: ChargeRequest;
  readonly config: CompiledConfig;
  readonly t: number;
  readonly requestId: string;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function answer(asked: Asked, result: StoreResult, degraded?: boolean): Decision {
  return present(asked.planned, asked.charge, result, asked.config, asked.t, asked.requestId, degraded === true);
}

/** The insurance store decides, with every limit × share; the main store is tried again next time. */
async function insuredAnswer(ctx: PolicyContext, insurance: Insurance, read: DescriptorRead, who: Who, asked: Asked, error: unknown): Promise<Decision> {
  const scaled = insured(asked.config, insurance.share);
  // the same read of the descriptor as the first plan's: an untrusted object is read once
  const replanned = plan(scaled, read, who.credential, who.roles);
  const charge = chargeRequest(replanned, subjectKeysOf(who.credential), scaled, asked.t, asked.requestId);
  let outcome: ChargeOutcome;
  try {
    outcome = await insurance.store.charge(charge);
  } catch (second) {
    return answer(asked, { kind: "store_failed", error: `${describe(error)}; insurance store: ${describe(second)}`, failOpen: ctx.failOpen });
  }
  const decision = answer({ planned: replanned, charge, config: scaled, t: asked.t, requestId: asked.requestId }, outcome, true);
  if (decision.release !== undefined) ctx.insuredTickets.add(decision.release);
  return decision;
}

/** `policy.check`: see `Policy.check`. */
export async function check(ctx: PolicyContext, request: PolicyRequest, who: Who): Promise<Decision> {
  assertCredential(who?.credential);
  assertRoles(who.roles);
  const t = ctx.now();
  const config = applyLimits(ctx.config, who.limits, "who.limits");
  // read once, into plain values: the insurance path plans again from the same read
  const read = readDescriptor(request);
  const planned = plan(config, read, who.credential, who.roles);
  const requestId = ctx.requestId(planned.requestId);
  const charge = chargeRequest(planned, subjectKeysOf(who.credential), config, t, requestId);
  const asked: Asked = { planned, charge, config, t, requestId };
  let outcome: ChargeOutcome;
  try {
    const pending = ctx.store.charge(charge);
    // a store that answers synchronously (MemoryStore) is not made to wait a microtask turn
    outcome = isThenable(pending) ? await pending : pending;
  } catch (error) {
    const decision =
      ctx.insurance === undefined
        ? answer(asked, { kind: "store_failed", error: describe(error), failOpen: ctx.failOpen })
        : await insuredAnswer(ctx, ctx.insurance, read, who, asked, error);
    ctx.hooks.storeFailed(error, decision);
    return ctx.hooks.decided(decision);
  }
  return ctx.hooks.decided(answer(asked, outcome));
}
