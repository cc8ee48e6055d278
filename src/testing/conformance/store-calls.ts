/**
 * Calls to a store under test that also check what every answer must satisfy: an outcome's `now`
 * (when reported) and its windows line up with the request, `reset` exists before it is called,
 * and a charge the store answered is never handed to `ChargeRequest.late`.
 */
import { expect } from "../vitest-api.js";
import type { ResetRequest } from "../../store.js";
import type { BudgetCharge, ChargeOutcome, ChargeRequest, PolicyStore, WindowReading } from "../../store.js";

/** How often the store called the `late` of each charge it answered, by store (checked again when a case ends). */
const answered = new WeakMap<PolicyStore, { readonly id: string; calls: number }[]>();

/**
 * `request` with a `ChargeRequest.late` that counts its calls, set as `createPolicy` sets it (not
 * enumerable), unless the request has one.
 */
function watched(store: PolicyStore, request: ChargeRequest): { request: ChargeRequest; spy: { readonly id: string; calls: number } | undefined } {
  // only where createPolicy sets one (a cap, or a keyed write on a store that can forget): a store's
  // path for a charge without it is run too
  if (request.late !== undefined || (request.cap === undefined && (request.idempotency === undefined || store.forget === undefined))) return { request, spy: undefined };
  const spy = { id: request.id, calls: 0 };
  const copy = { ...request };
  Object.defineProperty(copy, "late", { value: () => void spy.calls++, enumerable: false });
  return { request: copy, spy };
}

/**
 * `store.charge(request)`, checking the outcome's `now` and its number of windows. A charge carries
 * a `late` where `createPolicy` gives it one (a cap; a keyed write, when the store has `forget`),
 * which a store that answered the charge must never call: `late` is for a charge it gave up on.
 */
export async function charge(store: PolicyStore, request: ChargeRequest): Promise<ChargeOutcome> {
  const { request: sent, spy } = watched(store, request);
  const outcome = await store.charge(sent);
  if (outcome.now !== undefined) expect(outcome.now, "ChargeOutcome.now, when reported, is the request's now").toBe(request.now);
  expect(outcome.windows, "ChargeOutcome.windows lines up with ChargeRequest.budgets").toHaveLength(request.budgets.length);
  if (spy !== undefined) {
    expect(spy.calls, `ChargeRequest.late is for a charge the store gave up on (it threw); it was called for ${spy.id}, which the store answered`).toBe(0);
    const spies = answered.get(store) ?? [];
    spies.push(spy);
    answered.set(store, spies);
  }
  return outcome;
}

/**
 * Fails when the store called `late` of any charge it answered (since {@link charge} checked it):
 * called when a case ends, a little after its last step.
 */
export async function expectNoLateCalls(store: PolicyStore): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 10));
  for (const spy of answered.get(store) ?? []) {
    expect(spy.calls, `ChargeRequest.late is for a charge the store gave up on (it threw); it was called for ${spy.id} after the store answered it`).toBe(0);
  }
  answered.delete(store);
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
