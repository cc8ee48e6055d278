/**
 * Stage three, render: presents an {@link Answer} that decide.ts chose as the status, error body
 * and headers of spec §2, §7 and §8, and the `reason` a host logs. Decides nothing; pure.
 */
import { countedCap, releaseTicket } from "./charge-request.js";
import type { CompiledConfig } from "./config.js";
import type { BudgetSpec } from "./config-types.js";
import { CHARGES_BUDGETS, decide, type Answer, type StoreResult } from "./decide.js";
import { describeFingerprint } from "./fingerprint.js";
import { capRetryAfter, rateLimitHeaders, spentBudgets, uncountedHeaders } from "./headers.js";
import * as say from "./messages.js";
import type { Plan } from "./plan.js";
import type { Refusal } from "./refusal.js";
import type { CapCharge, ChargeOutcome, ChargeRequest } from "./store.js";
import type { Decision, ErrorCode, ErrorObject, Reason, RefusalStatus, ReleaseTicket } from "./types.js";

const ALLOWED: Reason = Object.freeze({ rule: "allowed" });
const REPLAYED: Reason = Object.freeze({ rule: "allowed", replay: true });
const NONE: readonly string[] = Object.freeze([]);
const NOTHING: Decision["charged"] = Object.freeze({ budgets: NONE, caps: NONE });

/** What charging a list of budgets shows, one frozen object per list (the lists are the compiled config's). */
const chargedOf = new WeakMap<readonly BudgetSpec[], Decision["charged"]>();

function chargedBudgets(budgets: readonly BudgetSpec[]): Decision["charged"] {
  let charged = chargedOf.get(budgets);
  if (charged === undefined) {
    charged = Object.freeze({ budgets: Object.freeze(budgets.map((b) => b.name)), caps: NONE });
    chargedOf.set(budgets, charged);
  }
  return charged;
}

/** Everything an answer is presented from. */
export interface Facts {
  readonly plan: Plan;
  /** What the store was asked. */
  readonly charge: ChargeRequest;
  readonly result: StoreResult;
  /** The daily cap as the store counted it (`countedCap` in charge-request.ts). */
  readonly cap: CapCharge | undefined;
  /** For the error bodies and messages: `docsUrl`, `dailyRetryAfter`, `dayOffsetMs`. */
  readonly config: Pick<CompiledConfig, "docsUrl" | "dailyRetryAfter" | "dayOffsetMs">;
  /** The time the store decided at (its own clock's, when it reports one). */
  readonly now: number;
  readonly requestId: string;
  /** Decided by the insurance store (see policy.ts). */
  readonly degraded?: boolean;
}

interface Refused {
  readonly status: RefusalStatus;
  readonly body: { error: ErrorObject };
}

/** What a decision shows: its headers, why, what it charged, and its refusal or release ticket. */
interface Shown {
  readonly headers: Record<string, string>;
  readonly reason: Reason;
  readonly charged: Decision["charged"];
  readonly refused?: Refused;
  readonly release?: ReleaseTicket;
}

/**
 * The one decision builder: allowed without a body, refused with one. Both arms have the same
 * fields in the same order (`body` undefined when allowed), so hosts' reads stay monomorphic.
 */
function decision(f: Facts, { headers, reason, charged, refused, release }: Shown): Decision {
  const { plan } = f;
  const built = {
    allowed: refused === undefined,
    status: refused === undefined ? 200 : refused.status,
    headers,
    body: refused?.body,
    operation: plan.operation?.id,
    view: plan.view,
    newsletter: plan.newsletter,
    charged,
    requestId: f.requestId,
    reason,
  } as Decision;
  if (release !== undefined) built.release = release;
  if (f.degraded === true) built.degraded = true;
  return built;
}

/** The optional fields of an error body (spec §7: left out when they do not apply). */
type ErrorFields = Pick<Refusal, "param" | "allowedValues">;

function refusal(f: Facts, status: RefusalStatus, code: ErrorCode, message: string, { param, allowedValues }: ErrorFields = {}): Refused {
  const error: ErrorObject = { code, message, request_id: f.requestId, docs_url: `${f.config.docsUrl}/${code}` };
  if (param !== undefined) error.param = param;
  if (allowedValues !== undefined) error.allowed_values = [...allowedValues];
  return { status, body: { error } };
}

function byPlan(f: Facts, headers: Record<string, string>, planned: Refusal, charged: Decision["charged"]): Decision {
  const refused = refusal(f, planned.status, planned.code, planned.message, planned);
  return decision(f, { headers, reason: planned.reason, charged, refused });
}

function budgetSpent(f: Facts, headers: Record<string, string>, outcome: ChargeOutcome): Decision {
  // DESIGN §3: name general when it is spent; wait for the longest of the spent budgets
  const { spent, named, retryAfter } = spentBudgets(f.plan, outcome.windows, f.now);
  headers["Retry-After"] = String(retryAfter);
  const refused = refusal(f, 429, "rate_limited", say.budgetSpent(named));
  return decision(f, { headers, reason: { rule: "budget_spent", budget: named.name, spent }, charged: NOTHING, refused });
}

function conflict(f: Facts, headers: Record<string, string>, fingerprint: string, charged: Decision["charged"]): Decision {
  const key = f.plan.idempotencyKey!;
  const first = describeFingerprint(fingerprint);
  const message = say.idempotencyConflict(key, first, first === describeFingerprint(f.plan.fingerprint));
  return decision(f, { headers, reason: { rule: "idempotency_conflict", key }, charged, refused: refusal(f, 409, "conflict", message, { param: "Idempotency-Key" }) });
}

function capReached(f: Facts, headers: Record<string, string>, count: number, charged: Decision["charged"]): Decision {
  const { name, limit, resetAt } = f.cap!;
  const unit = f.config.dailyRetryAfter;
  headers["Retry-After"] = String(capRetryAfter(resetAt, f.now, unit));
  const message = say.dailyCapReached(name, limit, f.plan.newsletter, f.config.dayOffsetMs, unit);
  return decision(f, { headers, reason: { rule: "daily_cap", cap: name, limit, count, resetAt }, charged, refused: refusal(f, 429, "rate_limited", message) });
}

function allowed(f: Facts, headers: Record<string, string>, outcome: Extract<ChargeOutcome, { kind: "charged" }>, charged: Decision["charged"]): Decision {
  const reason = outcome.replay ? REPLAYED : ALLOWED;
  if (outcome.member === undefined) return decision(f, { headers, reason, charged });
  const ticket = releaseTicket(f.charge, outcome.member, f.cap!.day);
  return decision(f, { headers, reason, charged: { budgets: charged.budgets, caps: [f.cap!.name] }, release: ticket });
}

/**
 * What a charge's result comes to, the same for `evaluate` and `policy.check`: the decision order
 * ({@link decide}), then {@link render}, at the store's clock when it decided (`result.now`), else `t`.
 *
 * @param degraded - the insurance store decided (the decision says so).
 */
export function present(planned: Plan, charge: ChargeRequest, result: StoreResult, config: CompiledConfig, t: number, requestId: string, degraded = false): Decision {
  const now = result.kind === "store_failed" ? t : (result.now ?? t);
  const cap = result.kind === "store_failed" ? charge.cap : countedCap(charge, result);
  return render(decide(planned.refusal, result), { plan: planned, charge, result, cap, config, now, requestId, degraded });
}

/**
 * Presents an answer.
 *
 * @param answer - what {@link decide} answered.
 * @param f - the plan, the store's request and result, and the presentation settings.
 */
export function render(answer: Answer, f: Facts): Decision {
  const { plan, result, now } = f;
  const headers = result.kind === "store_failed" ? uncountedHeaders(plan, now) : rateLimitHeaders(plan, result.windows, now);
  const charged = CHARGES_BUDGETS[answer] ? chargedBudgets(plan.budgets) : NOTHING;
  switch (answer) {
    case "refused":
    case "refused_uncharged":
      return byPlan(f, headers, plan.refusal!, charged);
    case "budget_spent":
      return budgetSpent(f, headers, result as ChargeOutcome);
    case "conflict":
      return conflict(f, headers, (result as Extract<ChargeOutcome, { kind: "conflict" }>).fingerprint, charged);
    case "cap_reached":
      return capReached(f, headers, (result as Extract<ChargeOutcome, { kind: "cap_reached" }>).count, charged);
    case "allowed":
      return allowed(f, headers, result as Extract<ChargeOutcome, { kind: "charged" }>, charged);
    case "unavailable": {
      const { error } = result as Extract<StoreResult, { kind: "store_failed" }>;
      const refused = refusal(f, 503, "service_unavailable", say.STORE_UNAVAILABLE);
      return decision(f, { headers, reason: { rule: "store_unavailable", failOpen: false, error }, charged: NOTHING, refused });
    }
    case "allowed_uncounted": {
      const { error } = result as Extract<StoreResult, { kind: "store_failed" }>;
      return decision(f, { headers, reason: { rule: "store_unavailable", failOpen: true, error }, charged: NOTHING });
    }
  }
}
