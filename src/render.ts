/**
 * Stage three, render: from a plan and what the store did to the status, error body and headers
 * of spec §2, §7 and §8. Pure.
 */
import type { BudgetSpec, CompiledConfig } from "./config.js";
import type { Plan, Refusal } from "./plan.js";
import type { ChargeOutcome, ChargeRequest, WindowReading } from "./store.js";
import type { AllowedDecision, BudgetFigures, BudgetReport, CapName, Decision, ErrorCode, ErrorObject, Reason, RefusalStatus, RefusedDecision, ReleaseTicket } from "./types.js";
import { describeFingerprint } from "./fingerprint.js";
import { dayOf } from "./keys.js";

const ALLOWED: Reason = Object.freeze({ rule: "allowed" });
const REPLAYED: Reason = Object.freeze({ rule: "allowed", replay: true });
const NONE: readonly string[] = Object.freeze([]);
const NOTHING: Decision["charged"] = Object.freeze({ budgets: NONE, caps: NONE });
const HOUR_MS = 3_600_000;

/** A budget's figures after this request (DESIGN §4: an unused budget shows its size and whole window). */
export function figures(budget: BudgetSpec, reading: WindowReading, now: number): BudgetFigures {
  const remaining = Math.max(0, budget.limit - reading.count);
  const reset = reading.resetAt > now ? Math.max(1, Math.ceil((reading.resetAt - now) / 1000)) : budget.window;
  return { limit: budget.limit, remaining, reset };
}

/**
 * The four `RateLimit-*` headers (spec §8). The budget "closest to running out" has the fewest
 * requests remaining; ties go to the longer reset, then to policy order (DESIGN §5).
 */
export function rateLimitHeaders(plan: Pick<Plan, "budgets" | "policyHeader">, windows: readonly WindowReading[], now: number): Record<string, string> {
  let best: BudgetFigures | undefined;
  for (let i = 0; i < plan.budgets.length; i++) {
    const f = figures(plan.budgets[i]!, windows[i]!, now);
    if (best === undefined || f.remaining < best.remaining || (f.remaining === best.remaining && f.reset > best.reset)) best = f;
  }
  return {
    "RateLimit-Policy": plan.policyHeader,
    "RateLimit-Limit": String(best!.limit),
    "RateLimit-Remaining": String(best!.remaining),
    "RateLimit-Reset": String(best!.reset),
  };
}

function errorBody(config: CompiledConfig, code: ErrorCode, message: string, requestId: string, param?: string, allowedValues?: readonly string[]): { error: ErrorObject } {
  const error: ErrorObject = { code, message, request_id: requestId, docs_url: `${config.docsUrl}/${code}` };
  if (param !== undefined) error.param = param;
  if (allowedValues !== undefined) error.allowed_values = [...allowedValues];
  return { error };
}

function dayStart(config: CompiledConfig): string {
  const minutes = config.dayOffsetMs / 60_000;
  if (minutes === 0) return "00:00 UTC";
  const sign = minutes > 0 ? "+" : "-";
  const abs = Math.abs(minutes);
  return `00:00 UTC${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

function capMessage(cap: CapName, limit: number, newsletter: string | undefined, config: CompiledConfig): string {
  const what =
    cap === "dispatch"
      ? `The daily dispatch limit of ${limit} sends and schedules for newsletter "${newsletter}" is reached`
      : `The daily test-send limit of ${limit} requests for this credential is reached`;
  const unit = config.dailyRetryAfter === "hours" ? "hours" : "seconds";
  // spec §7: for a daily cap the message says so, and Retry-After is in hours
  return `${what}. This is a daily limit: it resets at ${dayStart(config)}; Retry-After is in ${unit}.`;
}

function budgetMessage(report: BudgetReport): string {
  const size = `${report.limit} requests per ${report.window} seconds`;
  if (report.name === "general") {
    return `The general budget (${size}) is spent: no call can be made with this credential until it refills in ${report.reset} s.`;
  }
  return `The ${report.name} budget (${size}) is spent; it refills in ${report.reset} s. Calls outside the ${report.name} budget remain possible.`;
}

function refusedByPlan(base: Base, config: CompiledConfig, refusal: Refusal, charged: Decision["charged"]): Decision {
  const body = errorBody(config, refusal.code, refusal.message, base.requestId, refusal.param, refusal.allowedValues);
  return refused(base, refusal.status, body, refusal.reason, charged);
}

interface Base {
  plan: Plan;
  requestId: string;
  headers: Record<string, string>;
}

/**
 * The one decision builder: allowed without a body, refused with one. Both arms have the same
 * fields in the same order (`body` undefined when allowed), so hosts' reads stay monomorphic.
 */
function decide(base: Base, reason: Reason, charged: Decision["charged"]): AllowedDecision;
function decide(base: Base, reason: Reason, charged: Decision["charged"], status: RefusalStatus, body: { error: ErrorObject }): RefusedDecision;
function decide(base: Base, reason: Reason, charged: Decision["charged"], status: 200 | RefusalStatus = 200, body?: { error: ErrorObject }): Decision {
  const { plan } = base;
  return {
    allowed: body === undefined,
    status,
    headers: base.headers,
    body,
    operation: plan.operation?.id,
    view: plan.view,
    newsletter: plan.newsletter,
    charged,
    requestId: base.requestId,
    reason,
  } as Decision;
}

function refused(base: Base, status: RefusalStatus, body: { error: ErrorObject }, reason: Reason, charged: Decision["charged"]): Decision {
  return decide(base, reason, charged, status, body);
}

/**
 * The decision for a planned request, what was asked of the store and what it did. `now` is the
 * time the store decided at (its own clock's, when it reports one).
 */
export function render(plan: Plan, charge: ChargeRequest, outcome: ChargeOutcome, config: CompiledConfig, now: number, requestId: string): Decision {
  const headers = rateLimitHeaders(plan, outcome.windows, now);
  const base: Base = { plan, requestId, headers };
  const charged = { budgets: outcome.kind === "budget_spent" ? NONE : plan.budgets.map((b) => b.name), caps: NONE };

  const refusal = plan.refusal;
  if (outcome.kind === "budget_spent" && refusal?.stage === "route") {
    // DESIGN §1: route comes before budgets; a spent budget is charged nothing more (DESIGN §2)
    return refusedByPlan(base, config, refusal, NOTHING);
  }

  if (outcome.kind === "budget_spent") {
    const spent: BudgetReport[] = [];
    plan.budgets.forEach((b, i) => {
      const f = figures(b, outcome.windows[i]!, now);
      if (f.remaining === 0) spent.push({ name: b.name, window: b.window, ...f });
    });
    // DESIGN §3: name general when it is spent; wait for the longest of the spent budgets
    const named = spent.find((s) => s.name === "general") ?? spent[0]!;
    headers["Retry-After"] = String(Math.max(...spent.map((s) => s.reset)));
    const body = errorBody(config, "rate_limited", budgetMessage(named), requestId);
    return refused(base, 429, body, { rule: "budget_spent", budget: named.name, spent }, NOTHING);
  }

  if (refusal !== undefined) return refusedByPlan(base, config, refusal, charged);

  if (outcome.kind === "conflict") {
    const key = plan.idempotencyKey!;
    const first = describeFingerprint(outcome.fingerprint);
    const detail = first === describeFingerprint(plan.fingerprint) ? `${first} with another query or body` : first;
    const message = `Idempotency-Key "${key}" was already used for a different request (${detail}). A key may be reused only to retry the same request (same method, path, query and body); use a new key for a new request.`;
    return refused(base, 409, errorBody(config, "conflict", message, requestId, "Idempotency-Key"), { rule: "idempotency_conflict", key }, charged);
  }

  if (outcome.kind === "cap_reached") {
    const cap = plan.cap!;
    const limit = config.caps[cap].limit;
    const { resetAt } = dayOf(now, config.dayOffsetMs);
    const waitMs = resetAt - now;
    headers["Retry-After"] = String(Math.max(1, Math.ceil(waitMs / (config.dailyRetryAfter === "hours" ? HOUR_MS : 1000))));
    const body = errorBody(config, "rate_limited", capMessage(cap, limit, plan.newsletter, config), requestId);
    return refused(base, 429, body, { rule: "daily_cap", cap, limit, count: outcome.count, resetAt }, charged);
  }

  const decision = decide(base, outcome.replay ? REPLAYED : ALLOWED, charged);
  if (outcome.member !== undefined) {
    const cap = plan.cap!;
    charged.caps = [cap];
    decision.release = releaseTicket(charge, outcome.member, outcome.now === undefined ? undefined : dayOf(outcome.now, config.dayOffsetMs).day);
  }
  return decision;
}

/** The ticket `release` needs: the cap charge as the store made it (its day by the store's clock, when it has one). */
function releaseTicket(charge: ChargeRequest, member: string, storeDay: number | undefined): ReleaseTicket {
  const cap = charge.cap!;
  const ticket = { cap: cap.name, key: cap.key, day: storeDay ?? cap.day, member };
  return charge.idempotency === undefined ? ticket : { ...ticket, idempotencyKey: charge.idempotency.key };
}

/**
 * The `RateLimit-*` headers when the store could not be read: spec §1.3 and §7 want them on every
 * response, so they are sent with the figures that claim nothing: no request known to be left, and
 * a reset of 1 s (the store may be back at once). Ties go to policy order (DESIGN §5).
 */
function uncountedHeaders(plan: Plan, now: number): Record<string, string> {
  const windows = plan.budgets.map((b) => ({ count: b.limit, resetAt: now + 1000 }));
  return rateLimitHeaders(plan, windows, now);
}

/**
 * The decision when the store failed (DESIGN §12). A route refusal stands (it comes before budgets,
 * DESIGN §1), and so does any refusal of the plan when failing open: failing open skips counting,
 * never a rule. Otherwise 503 `service_unavailable`, or, failing open, allowed uncounted. Nothing is
 * charged, and `reason` carries the store's error for the host's log.
 */
export function storeFailed(plan: Plan, config: CompiledConfig, now: number, requestId: string, error: string, failOpen: boolean): Decision {
  const base: Base = { plan, requestId, headers: uncountedHeaders(plan, now) };
  const refusal = plan.refusal;
  if (refusal !== undefined && (failOpen || refusal.stage === "route")) return refusedByPlan(base, config, refusal, NOTHING);
  const reason: Reason = { rule: "store_unavailable", failOpen, error };
  if (!failOpen) {
    const message = "The rate-limit store is unavailable, so this request cannot be counted. Retry shortly.";
    return refused(base, 503, errorBody(config, "service_unavailable", message, requestId), reason, NOTHING);
  }
  return decide(base, reason, NOTHING);
}
