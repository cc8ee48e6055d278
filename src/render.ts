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
import type { CapCharge, ChargeOutcome, ChargeRequest, WindowReading } from "./store.js";
import type { Decision, ErrorCode, ErrorObject, Reason, RefusalStatus, ReleaseTicket } from "./types.js";

const ALLOWED: Reason = Object.freeze({ rule: "allowed" });
const REPLAYED: Reason = Object.freeze({ rule: "allowed", replay: true });
/**
 * What a decision that charged nothing shows: a new object each time, as every decision's `charged`
 * is its own (DESIGN: `charged: { budgets: string[]; caps: string[] }`, lists a host may change).
 */
function nothing(): Decision["charged"] {
  return { budgets: [], caps: [] };
}

/** The names of each list of budgets, made once (the lists are the compiled config's). */
const namesOf = new WeakMap<readonly BudgetSpec[], readonly string[]>();

/** The list charged last and its names: most requests repeat it, and an identity test is cheaper than a WeakMap's lookup. */
let lastBudgets: readonly BudgetSpec[] | undefined;
let lastNames: readonly string[] = [];

/** What charging a list of budgets shows: the names copied into the decision's own list. */
function chargedBudgets(budgets: readonly BudgetSpec[]): Decision["charged"] {
  if (budgets !== lastBudgets) {
    let names = namesOf.get(budgets);
    // not frozen: it is never handed out, and slicing a frozen array takes V8's slow path (+0.4 µs a check)
    if (names === undefined) namesOf.set(budgets, (names = budgets.map((b) => b.name)));
    lastBudgets = budgets;
    lastNames = names;
  }
  return { budgets: lastNames.slice(), caps: [] };
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

/**
 * The one decision builder: allowed without a body, refused with one (DESIGN: `body` "present
 * exactly when refused": an allowed decision has no `body` key at all, not one holding undefined).
 * The other fields come in the same order in both. Its parts come as arguments, not in an object: a
 * decision is built with no object but itself.
 */
function decision(
  plan: Plan,
  requestId: string,
  degraded: boolean | undefined,
  headers: Record<string, string>,
  reason: Reason,
  charged: Decision["charged"],
  refused?: Refused,
  release?: ReleaseTicket,
): Decision {
  const built = (
    refused === undefined
      ? { allowed: true, status: 200, headers, operation: plan.operation?.id, view: plan.view, newsletter: plan.newsletter, charged, requestId, reason }
      : { allowed: false, status: refused.status, headers, body: refused.body, operation: plan.operation?.id, view: plan.view, newsletter: plan.newsletter, charged, requestId, reason }
  ) as Decision;
  if (release !== undefined) built.release = release;
  if (degraded === true) built.degraded = true;
  return built;
}

/** {@link decision} with the facts' plan, id and degraded flag. */
function decisionOf(f: Facts, headers: Record<string, string>, reason: Reason, charged: Decision["charged"], refused?: Refused, release?: ReleaseTicket): Decision {
  return decision(f.plan, f.requestId, f.degraded, headers, reason, charged, refused, release);
}

/**
 * An error body in the spec's shape (§7, DESIGN §13): exactly its fields, `param` and
 * `allowed_values` left out when they do not apply. The adapters answer `GET /rate-limit`'s 503 with it.
 */
export function errorBody(requestId: string, docsUrl: string, code: ErrorCode, message: string, param?: string, allowedValues?: readonly string[]): { error: ErrorObject } {
  const error: ErrorObject = { code, message, request_id: requestId, docs_url: `${docsUrl}/${code}` };
  if (param !== undefined) error.param = param;
  if (allowedValues !== undefined) error.allowed_values = [...allowedValues];
  return { error };
}

function refusal(requestId: string, docsUrl: string, status: RefusalStatus, code: ErrorCode, message: string, param?: string, allowedValues?: readonly string[]): Refused {
  return { status, body: errorBody(requestId, docsUrl, code, message, param, allowedValues) };
}

/** The plan's refusal (400, 403, 404): no facts object, as this is the common refusal. */
function byPlan(plan: Plan, requestId: string, docsUrl: string, degraded: boolean | undefined, headers: Record<string, string>, charged: Decision["charged"]): Decision {
  const planned = plan.refusal!;
  const refused = refusal(requestId, docsUrl, planned.status, planned.code, planned.message, planned.param, planned.allowedValues);
  return decision(plan, requestId, degraded, headers, planned.reason, charged, refused);
}

/** A 429 of a spent budget (DESIGN §3): general named when it is spent, the longest wait of the spent ones. */
function budgetSpent(plan: Plan, requestId: string, docsUrl: string, degraded: boolean | undefined, headers: Record<string, string>, windows: readonly WindowReading[], now: number): Decision {
  const { spent, named, retryAfter } = spentBudgets(plan, windows, now);
  headers["Retry-After"] = String(retryAfter);
  // the spent budget that waits longest, when it is not the one named
  const longest = spent.reduce((a, b) => (b.reset > a.reset ? b : a), named);
  const refused = refusal(requestId, docsUrl, 429, "rate_limited", say.budgetSpent(named, retryAfter, longest));
  return decision(plan, requestId, degraded, headers, { rule: "budget_spent", budget: named.name, spent }, nothing(), refused);
}

function conflict(f: Facts, headers: Record<string, string>, fingerprint: string, charged: Decision["charged"]): Decision {
  const key = f.plan.idempotencyKey!;
  const first = describeFingerprint(fingerprint);
  const message = say.idempotencyConflict(key, first, first === describeFingerprint(f.plan.fingerprint));
  const refused = refusal(f.requestId, f.config.docsUrl, 409, "conflict", message, "Idempotency-Key");
  return decisionOf(f, headers, { rule: "idempotency_conflict", key }, charged, refused);
}

function capReached(f: Facts, headers: Record<string, string>, count: number, charged: Decision["charged"]): Decision {
  const { name, limit, resetAt } = f.cap!;
  const unit = f.config.dailyRetryAfter;
  headers["Retry-After"] = String(capRetryAfter(resetAt, f.now, unit));
  const message = say.dailyCapReached(name, limit, f.plan.newsletter, f.config.dayOffsetMs, unit);
  return decisionOf(f, headers, { rule: "daily_cap", cap: name, limit, count, resetAt }, charged, refusal(f.requestId, f.config.docsUrl, 429, "rate_limited", message));
}

/** An allowed cap charge: its release ticket, and the cap it counted toward. */
function allowedCapCharge(f: Facts, headers: Record<string, string>, outcome: Extract<ChargeOutcome, { kind: "charged" }>, charged: Decision["charged"]): Decision {
  const ticket = releaseTicket(f.charge, outcome.member!, f.cap!.day);
  return decisionOf(f, headers, outcome.replay ? REPLAYED : ALLOWED, { budgets: charged.budgets, caps: [f.cap!.name] }, undefined, ticket);
}

/**
 * What a charge's result comes to, the same for `evaluate` and `policy.check`: the decision order
 * ({@link decide}), then the answer presented, at the store's clock when it decided (`result.now`),
 * else `t`. The answers most requests get (the plan's refusal, a spent budget, allowed without a
 * cap) are presented from the plan and the result; the rarer ones from their {@link Facts}.
 *
 * @param degraded - the insurance store decided (the decision says so).
 */
export function present(planned: Plan, charge: ChargeRequest, result: StoreResult, config: CompiledConfig, t: number, requestId: string, degraded = false): Decision {
  const answer = decide(planned.refusal, result);
  const now = result.kind === "store_failed" ? t : (result.now ?? t);
  const headers = result.kind === "store_failed" ? uncountedHeaders(planned, now) : rateLimitHeaders(planned, result.windows, now);
  const charged = CHARGES_BUDGETS[answer] ? chargedBudgets(planned.budgets) : nothing();
  switch (answer) {
    case "refused":
    case "refused_uncharged":
      return byPlan(planned, requestId, config.docsUrl, degraded, headers, charged);
    case "budget_spent":
      return budgetSpent(planned, requestId, config.docsUrl, degraded, headers, (result as ChargeOutcome).windows, now);
    case "allowed": {
      const outcome = result as Extract<ChargeOutcome, { kind: "charged" }>;
      if (outcome.member === undefined) return decision(planned, requestId, degraded, headers, outcome.replay ? REPLAYED : ALLOWED, charged);
    }
  }
  const cap = result.kind === "store_failed" ? charge.cap : countedCap(charge, result);
  return render(answer, { plan: planned, charge, result, cap, config, now, requestId, degraded }, headers, charged);
}

/**
 * Presents one of the rarer answers (see {@link present}) from its facts.
 *
 * @param answer - what {@link decide} answered.
 * @param f - the plan, the store's request and result, and the presentation settings.
 */
function render(answer: Exclude<Answer, "refused" | "refused_uncharged" | "budget_spent">, f: Facts, headers: Record<string, string>, charged: Decision["charged"]): Decision {
  const { result } = f;
  switch (answer) {
    case "conflict":
      return conflict(f, headers, (result as Extract<ChargeOutcome, { kind: "conflict" }>).fingerprint, charged);
    case "cap_reached":
      return capReached(f, headers, (result as Extract<ChargeOutcome, { kind: "cap_reached" }>).count, charged);
    case "allowed":
      return allowedCapCharge(f, headers, result as Extract<ChargeOutcome, { kind: "charged" }>, charged);
    case "unavailable": {
      const { error } = result as Extract<StoreResult, { kind: "store_failed" }>;
      const refused = refusal(f.requestId, f.config.docsUrl, 503, "service_unavailable", say.STORE_UNAVAILABLE);
      return decisionOf(f, headers, { rule: "store_unavailable", failOpen: false, error }, nothing(), refused);
    }
    case "allowed_uncounted": {
      const { error } = result as Extract<StoreResult, { kind: "store_failed" }>;
      return decisionOf(f, headers, { rule: "store_unavailable", failOpen: true, error }, nothing());
    }
  }
}
