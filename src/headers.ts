/**
 * The rate-limit headers of spec §8 and the figures behind them: `RateLimit-*` on every response,
 * `Retry-After` on a 429.
 */
import type { BudgetSpec } from "./config-types.js";
import type { Plan } from "./plan.js";
import type { WindowReading } from "./store.js";
import type { BudgetFigures, BudgetReport } from "./types.js";

const HOUR_MS = 3_600_000;

/** A budget's figures after this request (DESIGN §4: an unused budget shows its size and whole window). */
export function figures(budget: BudgetSpec, reading: WindowReading, now: number): BudgetFigures {
  return { limit: budget.limit, remaining: remainingOf(budget, reading), reset: resetOf(budget, reading, now) };
}

/** Requests left in the window after this one. */
function remainingOf(budget: BudgetSpec, reading: WindowReading): number {
  return Math.max(0, budget.limit - reading.count);
}

/**
 * Whole seconds until the window resets (at least 1); a budget with no open window (no count: the
 * stores read none as `{ count: 0, resetAt: 0 }`) shows its whole window. (A clock before 1970 read
 * that 0 as a reset to come: an unused budget showed the seconds to 1970; found by a mutation review.)
 */
function resetOf(budget: BudgetSpec, reading: WindowReading, now: number): number {
  return reading.count > 0 && reading.resetAt > now ? Math.max(1, Math.ceil((reading.resetAt - now) / 1000)) : budget.window;
}

/**
 * The four `RateLimit-*` headers (spec §8). The budget "closest to running out" has the fewest
 * requests remaining; ties go to the longer reset, then to policy order (DESIGN §5).
 */
export function rateLimitHeaders(plan: Pick<Plan, "budgets" | "policyHeader">, windows: readonly WindowReading[], now: number): Record<string, string> {
  // each budget's figures compared as numbers: no object per budget
  let limit = 0;
  let remaining = Infinity;
  let reset = 0;
  for (let i = 0; i < plan.budgets.length; i++) {
    const budget = plan.budgets[i]!;
    const left = remainingOf(budget, windows[i]!);
    const wait = resetOf(budget, windows[i]!, now);
    if (i === 0 || left < remaining || (left === remaining && wait > reset)) {
      limit = budget.limit;
      remaining = left;
      reset = wait;
    }
  }
  return {
    "RateLimit-Policy": plan.policyHeader,
    "RateLimit-Limit": String(limit),
    "RateLimit-Remaining": String(remaining),
    "RateLimit-Reset": String(reset),
  };
}

/**
 * The `RateLimit-*` headers when the store could not be read: spec §1.3 and §7 want them on every
 * response, so they are sent with the figures that claim nothing: no request known to be left, and
 * a reset of 1 s (the store may be back at once). Ties go to policy order (DESIGN §5).
 */
export function uncountedHeaders(plan: Pick<Plan, "budgets" | "policyHeader">, now: number): Record<string, string> {
  const windows = plan.budgets.map((b) => ({ count: b.limit, resetAt: now + 1000 }));
  return rateLimitHeaders(plan, windows, now);
}

/**
 * The spent budgets of a 429 (DESIGN §3): `named` is `general` when it is spent, else the first
 * spent one; `retryAfter` is the longest wait among them, in seconds.
 */
export function spentBudgets(plan: Pick<Plan, "budgets">, windows: readonly WindowReading[], now: number): { spent: BudgetReport[]; named: BudgetReport; retryAfter: number } {
  const spent: BudgetReport[] = [];
  let named: BudgetReport | undefined;
  let retryAfter = 0;
  for (let i = 0; i < plan.budgets.length; i++) {
    const b = plan.budgets[i]!;
    const f = figures(b, windows[i]!, now);
    if (f.remaining !== 0) continue;
    const report: BudgetReport = { name: b.name, window: b.window, limit: f.limit, remaining: f.remaining, reset: f.reset };
    spent.push(report);
    if (named === undefined || (b.name === "general" && named.name !== "general")) named = report;
    if (f.reset > retryAfter) retryAfter = f.reset;
  }
  return { spent, named: named!, retryAfter };
}

/** `Retry-After` of a daily cap (DESIGN §6): whole hours (or seconds) to the day's end, rounded up, at least 1. */
export function capRetryAfter(resetAt: number, now: number, unit: "hours" | "seconds"): number {
  return Math.max(1, Math.ceil((resetAt - now) / (unit === "hours" ? HOUR_MS : 1000)));
}
