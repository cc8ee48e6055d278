/** The builders a scripted conformance case writes its requests with, and the shape of such a case. */
import { dayOf } from "../../calendar.js";
import { releaseTicket } from "../../charge-request.js";
import { IDEMPOTENCY_TTL_MS, type BudgetCharge, type CapCharge, type ChargeOutcome, type ChargeRequest, type PolicyStore } from "../../store.js";
import type { CapName, ReleaseTicket } from "../../types.js";

/**
 * Builders for the scripted cases: every key is namespaced by `prefix`, every time is an offset
 * from `start`.
 */
export function kit(start: number, prefix: string) {
  let n = 0;
  const cap = (name: string, limit: number, now: number, offsetMs = 0, cap: CapName = "dispatch"): CapCharge => ({
    name: cap,
    key: `${prefix}c:${name}`,
    limit,
    offsetMs,
    ...dayOf(now, offsetMs),
  });
  const key = (key: string, fingerprint: string, ttlMs = IDEMPOTENCY_TTL_MS) => ({ key: `${prefix}k:${key}`, fingerprint, ttlMs });
  const request = (at: number, budgets: readonly BudgetCharge[], extra: Partial<Pick<ChargeRequest, "refused" | "idempotency" | "cap">> = {}): ChargeRequest => ({
    id: `${prefix}r${++n}`,
    now: start + at,
    budgets,
    refused: false,
    ...extra,
  });
  return {
    /** The time of the case's first step (ms since the epoch). */
    start,
    budget: (name: string, limit: number, windowSeconds: number): BudgetCharge => ({ key: `${prefix}b:${name}`, limit, windowMs: windowSeconds * 1000 }),
    cap,
    key,
    /** An idempotency key in a credential's scope (what `reset` clears by scope). */
    scopedKey: (scope: string, key: string, fingerprint: string) => ({ key: `${prefix}s:${scope}:${key}`, fingerprint, ttlMs: IDEMPOTENCY_TTL_MS, scope: `${prefix}s:${scope}` }),
    scope: (scope: string) => `${prefix}s:${scope}`,
    request,
    /** A send of one article at `at`, counted toward the cap `nl` of `limit`, with the `Idempotency-Key` `idempotencyKey` when given. */
    send: (at: number, budgets: readonly BudgetCharge[], limit: number, idempotencyKey?: string): ChargeRequest =>
      request(at, budgets, { cap: cap("nl", limit, start + at), ...(idempotencyKey && { idempotency: key(idempotencyKey, "POST /articles/a_1/send") }) }),
    ticket: (request: ChargeRequest, outcome: ChargeOutcome): ReleaseTicket => {
      if (outcome.kind !== "charged" || outcome.member === undefined || request.cap === undefined) throw new Error("no cap charge to release");
      return releaseTicket(request, outcome.member);
    },
  };
}

/** The builders one scripted case is given. */
export type ScriptKit = ReturnType<typeof kit>;

/** One scripted case: its title (the rule it pins) and its steps, run on a fresh store. */
export interface ScriptedCase {
  readonly title: string;
  readonly run: (store: PolicyStore, k: ScriptKit) => Promise<void>;
}
