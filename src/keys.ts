/**
 * Store keys. Every id is length-prefixed, so that no two (credential, name) pairs can ever spell
 * the same key, whatever characters the ids hold.
 */
import type { BudgetSpec, CompiledConfig } from "./config.js";
import type { Plan } from "./plan.js";
import { IDEMPOTENCY_TTL_MS, type BudgetCharge, type ChargeRequest } from "./store.js";
import type { CapName, Credential } from "./types.js";

const DAY_MS = 24 * 60 * 60 * 1000;

function scoped(kind: string, id: string): string {
  return `${kind}:${id.length}.${id}`;
}

/**
 * Whose counters: spec §5.1 and §8.3 count budgets per API key or per OAuth authorisation, so an
 * API key and an authorisation that happen to share an id never share a budget.
 */
export function subjectOf(credential: Pick<Credential, "id" | "kind">): string {
  return `${credential.kind === "oauth" ? "o" : "k"}.${credential.id}`;
}

/** The store key of one credential's budget. */
export function budgetKey(subject: string, budget: string): string {
  return `${scoped("b", subject)}:${budget}`;
}

/**
 * Recent credentials' budget charges, so that a hot credential's keys are built (and hashed by the
 * store's Map) once, not on every request. Bounded: cleared when it holds too many credentials.
 */
const recent = new Map<string, Map<readonly BudgetSpec[], BudgetCharge[]>>();
const RECENT_MAX = 4096;

/** The budgets of a request as the store sees them. */
export function budgetCharges(subject: string, budgets: readonly BudgetSpec[]): readonly BudgetCharge[] {
  let byList = recent.get(subject);
  if (byList === undefined) {
    if (recent.size >= RECENT_MAX) recent.clear();
    byList = new Map();
    recent.set(subject, byList);
  }
  let charges = byList.get(budgets);
  if (charges === undefined) {
    // one entry per operation shape of each config; a host that compiles configs afresh stays bounded
    if (byList.size >= 64) byList.clear();
    charges = budgets.map((b) => Object.freeze({ key: budgetKey(subject, b.name), limit: b.limit, windowMs: b.window * 1000 }));
    Object.freeze(charges);
    byList.set(budgets, charges);
  }
  return charges;
}

/** Spec §8: dispatches are counted per newsletter across credentials, test sends per credential. */
export function capKey(cap: CapName, subject: string, newsletter: string): string {
  return cap === "dispatch" ? scoped("d", newsletter) : scoped("t", subject);
}

/** DESIGN §7: a key is scoped to the credential. */
export function idempotencyKey(subject: string, key: string): string {
  return `${scoped("k", subject)}:${key}`;
}

/** The day a moment falls in, and when that day ends (DESIGN §6: midnight UTC by default). */
export function dayOf(now: number, offsetMs: number): { day: number; resetAt: number } {
  const day = Math.floor((now + offsetMs) / DAY_MS);
  return { day, resetAt: (day + 1) * DAY_MS - offsetMs };
}

/** Everything the store must check and charge for a planned request. */
export function chargeRequest(plan: Plan, subject: string, config: CompiledConfig, now: number, id: string): ChargeRequest {
  const budgets = budgetCharges(subject, plan.budgets);
  if (plan.refusal !== undefined) return { id, now, budgets, refused: true };
  const idempotency =
    plan.idempotencyKey === undefined
      ? undefined
      : { key: idempotencyKey(subject, plan.idempotencyKey), fingerprint: plan.fingerprint, ttlMs: IDEMPOTENCY_TTL_MS, scope: scoped("k", subject) };
  const cap =
    plan.cap === undefined || plan.newsletter === undefined
      ? undefined
      : { name: plan.cap, key: capKey(plan.cap, subject, plan.newsletter), limit: config.caps[plan.cap].limit, offsetMs: config.dayOffsetMs, ...dayOf(now, config.dayOffsetMs) };
  return { id, now, budgets, refused: false, ...(idempotency && { idempotency }), ...(cap && { cap }) };
}
