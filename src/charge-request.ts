/**
 * What the store is asked, and what it hands back for `release`: a planned request turned into
 * store keys and limits ({@link chargeRequest}), the cap as the store counted it, the release
 * ticket of a cap charge ({@link releaseTicket}), and what the policy does with a cap charge the
 * store made after it gave up ({@link LateCharge}).
 */
import { dayOf } from "./calendar.js";
import type { CompiledConfig } from "./config.js";
import type { BudgetSpec } from "./config-types.js";
import type { Plan } from "./plan.js";
import { budgetKey, capKey, idempotencyKey, idempotencyScope, oneUseBudgetKey, type SubjectKeys } from "./store-keys.js";
import { IDEMPOTENCY_TTL_MS, type BudgetCharge, type CapCharge, type ChargeOutcome, type ChargeRequest, type PolicyStore, type RecordTicket } from "./store.js";
import type { Decision } from "./types.js";
import type { ReleaseTicket } from "./types.js";

/** Budget lists remembered per subject (store-keys.ts `SubjectKeys`); past this the list starts again. */
const LISTS_MAX = 16;

/** A kept subject's charge of one budget (see store-keys.ts `SubjectKeys` for why there are two). */
const keptCharge = (subject: string, b: BudgetSpec): BudgetCharge =>
  Object.freeze({ key: budgetKey(subject, b.name), limit: b.limit, windowMs: b.window * 1000, subject, budget: b.name });
/** The same for a subject built for one request: its own literal, so its own allocation site. */
const oneUseCharge = (subject: string, b: BudgetSpec): BudgetCharge =>
  Object.freeze({ key: oneUseBudgetKey(subject, b.name), limit: b.limit, windowMs: b.window * 1000, subject, budget: b.name });

/**
 * The budgets of a request as the store sees them. A hot credential's keys are built (and hashed
 * by the store's Map) once, not on every request: kept with its subject (`subjectKeysOf`), bounded.
 */
export function budgetCharges(entry: SubjectKeys, budgets: readonly BudgetSpec[]): readonly BudgetCharge[] {
  const subject = entry.subject;
  const { lists, charges } = entry;
  if (lists === undefined || charges === undefined) return Object.freeze(budgets.map((b) => oneUseCharge(subject, b)));
  const at = lists.indexOf(budgets);
  if (at >= 0) return charges[at]!;
  const built = Object.freeze(budgets.map((b) => keptCharge(subject, b)));
  if (lists.length >= LISTS_MAX) {
    lists.length = 0;
    charges.length = 0;
  }
  lists.push(budgets);
  charges.push(built);
  return built;
}

/**
 * Everything the store must check and charge for a planned request. Given the `store`
 * (`createPolicy` does), a charge that carries a cap carries `late` too ({@link LateCharge}).
 */
export function chargeRequest(plan: Plan, keys: SubjectKeys, config: CompiledConfig, now: number, id: string, store?: PolicyStore): ChargeRequest {
  const subject = keys.subject;
  const budgets = budgetCharges(keys, plan.budgets);
  if (plan.refusal !== undefined) return { id, now, budgets, refused: true };
  const given = plan.idempotencyKey;
  const scope = given === undefined ? "" : idempotencyScope(subject);
  const idempotency = given === undefined ? undefined : { key: idempotencyKey(scope, given), fingerprint: plan.fingerprint, ttlMs: IDEMPOTENCY_TTL_MS, scope };
  const cap =
    plan.cap === undefined || plan.newsletter === undefined
      ? undefined
      : { name: plan.cap, key: capKey(plan.cap, subject, plan.newsletter), limit: config.caps[plan.cap].limit, offsetMs: config.dayOffsetMs, ...dayOf(now, config.dayOffsetMs) };
  // fields set only when present (an absent one is left out, not undefined); no object spread on the hot path
  const request: { -readonly [K in keyof ChargeRequest]: ChargeRequest[K] } = { id, now, budgets, refused: false };
  if (idempotency !== undefined) request.idempotency = idempotency;
  if (cap !== undefined) request.cap = cap;
  // a charge the store may make after it gave up, which the policy would undo: a cap's place, or a
  // keyed write's record where the store can forget one
  if (store !== undefined && (cap !== undefined || (idempotency !== undefined && typeof store.forget === "function"))) {
    const late = new LateCharge(store, request);
    LATE.set(request, late);
    // not enumerable: the request stays plain data that a store may copy (structuredClone, a worker's
    // postMessage, JSON) without it; enumerable, a store that cloned its requests threw
    // DataCloneError on every send, answered 503 (found by a review)
    Object.defineProperty(request, "late", { value: late.late, enumerable: false });
  }
  return request;
}

/**
 * A charge the store gave up on (it threw, and the policy answered without it) that the store then
 * learnt it made after all (`ChargeRequest.late`: a reply read too late, written behind a backlog or
 * by a process too busy to read it). The policy, which knows what it answered, undoes it unless it
 * let the request through (`failOpen`, or an insured answer: the write may have been made, so it
 * stays counted): a cap place is released, and a keyed write's record without a cap is forgotten
 * (`PolicyStore.forget`). Left as they were, a send never made kept a place of the day's cap, and
 * a retry under the same Idempotency-Key was answered as a replay of a write that never ran (found
 * by a multi-process drill on Redis Cluster). Budgets stay charged (errs towards refusing); an undo
 * that fails leaves things counted, as a lost reply does.
 */
class LateCharge {
  private outcome: ChargeOutcome | undefined = undefined;
  /** What the policy answered once the store failed: undefined until then. */
  private allowed: boolean | undefined = undefined;
  private done = false;

  constructor(
    private readonly store: PolicyStore,
    private readonly charge: ChargeRequest,
  ) {}

  /** `ChargeRequest.late`: the charge the store made after it gave up. */
  readonly late = (outcome: ChargeOutcome): void => {
    this.outcome ??= outcome;
    this.settle();
  };

  /** The policy's answer to the request the store failed on. */
  answered(decision: Decision): void {
    this.allowed = decision.allowed;
    this.settle();
  }

  private settle(): void {
    const { outcome, charge } = this;
    if (this.done || outcome === undefined || this.allowed !== false) return;
    this.done = true;
    if (outcome.kind !== "charged" || outcome.replay) return;
    const store = this.store;
    if (outcome.member !== undefined) {
      const ticket = releaseTicket(charge, outcome.member, countedCap(charge, outcome)!.day);
      Promise.resolve()
        .then(() => store.release(ticket, charge.now))
        .catch(() => {});
      return;
    }
    const idem = charge.idempotency;
    if (idem === undefined || charge.cap !== undefined || store.forget === undefined) return;
    // the record this charge wrote: live for ttlMs from the time it was decided at
    const record: RecordTicket = { key: idem.key, fingerprint: idem.fingerprint, expiresAt: (outcome.now ?? charge.now) + idem.ttlMs, ...(idem.scope !== undefined && { scope: idem.scope }) };
    Promise.resolve()
      .then(() => store.forget!(record, charge.now))
      .catch(() => {});
  }
}

/** The {@link LateCharge} of a charge that carries a cap (made by {@link chargeRequest}): the policy tells it what it answered. */
const LATE = new WeakMap<ChargeRequest, LateCharge>();

/** The {@link LateCharge} of `charge`, when it carries one (a cap, or an idempotency key). */
export function lateChargeOf(charge: ChargeRequest): LateCharge | undefined {
  return charge.cap === undefined && charge.idempotency === undefined ? undefined : LATE.get(charge);
}


/**
 * The cap as the store counted it: the request's, or, when the store decided by its own clock
 * (`outcome.now`, e.g. Redis TIME), the day and reset by that clock.
 */
export function countedCap(charge: ChargeRequest, outcome: Pick<ChargeOutcome, "now">): CapCharge | undefined {
  const cap = charge.cap;
  if (cap === undefined || outcome.now === undefined) return cap;
  return { ...cap, ...dayOf(outcome.now, cap.offsetMs) };
}

/**
 * The ticket `release` needs: the cap charge as the store made it.
 *
 * @param charge - the request the store charged; it carried a cap.
 * @param member - `outcome.member`, the cap charge the store made.
 * @param day - the day the store counted it on (default: the request's).
 */
export function releaseTicket(charge: ChargeRequest, member: string, day: number = charge.cap!.day): ReleaseTicket {
  const cap = charge.cap!;
  const ticket = { cap: cap.name, key: cap.key, day, member };
  return charge.idempotency === undefined ? ticket : { ...ticket, idempotencyKey: charge.idempotency.key };
}
