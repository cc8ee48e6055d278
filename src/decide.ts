/**
 * The decision order, once. DESIGN §1: route → budgets → reach → permission → input → idempotency
 * → daily cap; the first check that refuses decides. Plan makes the checks that need no counters
 * (and tags a refusal with its check), the store makes the three that do (`runCharge` in charge.ts,
 * and the Redis scripts, stop where this order stops them), and {@link decide} puts the two
 * together into one answer. Render only presents the answer; it decides nothing.
 */
import type { Refusal } from "./refusal.js";
import type { ChargeOutcome } from "./store.js";


/** What the store did, or that it failed (DESIGN §12: 503 by default, `failOpen` lets it through). */
export type StoreResult = ChargeOutcome | { readonly kind: "store_failed"; readonly error: string; readonly failOpen: boolean };

/**
 * The answer to a request. Its details are in the plan and the store's result; render reads them.
 *
 * - `refused`: the plan's refusal (400, 403 or 404), charged to every budget of the request.
 * - `refused_uncharged`: the plan's refusal, charging nothing (a route refusal when a budget is
 *   spent or the store failed; any refusal when failing open).
 * - `budget_spent`: 429 naming a spent budget, charging nothing (DESIGN §2, §3).
 * - `conflict`: 409, the Idempotency-Key was used for another request (DESIGN §7).
 * - `cap_reached`: 429, a daily cap (DESIGN §6).
 * - `allowed`: charged to every budget, and to the daily cap when the store counted it.
 * - `unavailable`: 503 `service_unavailable`, the store failed (DESIGN §12).
 * - `allowed_uncounted`: the store failed and the policy fails open: allowed, nothing counted.
 */
export type Answer = "refused" | "refused_uncharged" | "budget_spent" | "conflict" | "cap_reached" | "allowed" | "unavailable" | "allowed_uncounted";

/** DESIGN §2, what each answer charges to the request's budgets (the daily cap: `allowed` only, when counted). */
export const CHARGES_BUDGETS: Readonly<Record<Answer, boolean>> = Object.freeze({
  refused: true,
  refused_uncharged: false,
  budget_spent: false,
  conflict: true,
  cap_reached: true,
  allowed: true,
  unavailable: false,
  allowed_uncounted: false,
});

/**
 * The decision procedure: walks DESIGN §1's order over the plan's refusal (if any) and the store's result.
 * The store was asked to stop after the budgets when the plan refused (`ChargeRequest.refused`),
 * so a result past the budgets means every earlier check passed.
 */
export function decide(refusal: Refusal | undefined, result: StoreResult): Answer {
  // 1. route: a request that cannot be read, or names no operation, gets that answer whatever the
  //    counters say; charged to its budgets only when they had room (docs/decision-order.md)
  if (refusal?.check === "route") return result.kind === "charged" ? "refused" : "refused_uncharged";

  // the store failed, so no counter could be read (DESIGN §12). A spent budget might have come
  // before the plan's refusal: 503. Failing open skips counting, never a rule.
  if (result.kind === "store_failed") {
    if (!result.failOpen) return "unavailable";
    return refusal === undefined ? "allowed_uncounted" : "refused_uncharged";
  }

  // 2. budgets: a spent budget is reported before reach, permission and input, and charges nothing
  if (result.kind === "budget_spent") return "budget_spent";

  // 3–5. reach, permission, input: the plan's refusal, charged to every budget
  if (refusal !== undefined) return "refused";

  // 6. idempotency: the key was used for a different request
  if (result.kind === "conflict") return "conflict";

  // 7. daily cap
  if (result.kind === "cap_reached") return "cap_reached";

  // 8. allowed (a replay when the key was already recorded)
  return "allowed";
}
