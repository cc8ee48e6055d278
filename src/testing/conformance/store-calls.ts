/**
 * Calls to a store under test that also check what every answer must satisfy: an outcome's `now`
 * (when reported) and its windows line up with the request, and `reset` exists before it is called.
 */
import { expect } from "../vitest-api.js";
import type { ResetRequest } from "../../store.js";
import type { BudgetCharge, ChargeOutcome, ChargeRequest, PolicyStore, WindowReading } from "../../store.js";

/** `store.charge(request)`, checking the outcome's `now` and its number of windows. */
export async function charge(store: PolicyStore, request: ChargeRequest): Promise<ChargeOutcome> {
  const outcome = await store.charge(request);
  if (outcome.now !== undefined) expect(outcome.now, "ChargeOutcome.now, when reported, is the request's now").toBe(request.now);
  expect(outcome.windows, "ChargeOutcome.windows lines up with ChargeRequest.budgets").toHaveLength(request.budgets.length);
  return outcome;
}

/** `store.read(budgets, now)`, reduced to each window's count and end. */
export async function read(store: PolicyStore, budgets: readonly BudgetCharge[], now: number): Promise<WindowReading[]> {
  return (await store.read(budgets, now)).map((w) => ({ count: w.count, resetAt: w.resetAt }));
}

/** `store.reset(request, now)`, failing with a hint when the store has no `reset`. */
export async function resetIn(store: PolicyStore, request: ResetRequest, now: number): Promise<void> {
  expect(typeof store.reset, "the store implements reset (or run the suite with { reset: false })").toBe("function");
  await store.reset!(request, now);
}
