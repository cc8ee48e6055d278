/**
 * Limits per plan: the host passes the budgets and caps that apply to this credential and newsletter
 * with the request (`who.limits`), and the policy decides with a config whose budgets and caps are
 * those. Validated like the config (a bad one throws PolicyConfigError naming the field), and
 * remembered by identity, so a host that keeps one limits object per plan validates it once.
 */
import { budgetsView, type CompiledConfig } from "./config.js";
import type { BudgetSpec } from "./config-types.js";
import { knownKeys, record, wholeNumber, WINDOW_MAX_SECONDS } from "./config-fields.js";
import { policyHeader, type CompiledOperation } from "./operations.js";
import { remapRoutes } from "./router.js";
import { PolicyConfigError } from "./errors.js";
import type { CapName, Limits } from "./types.js";


/** The effective config of one limits object, per base config. */
const byLimits = new WeakMap<object, WeakMap<CompiledConfig, CompiledConfig>>();
/** Effective configs by their numbers, so that equal limits in fresh objects share one compiled config. */
const byNumbers = new WeakMap<CompiledConfig, Map<string, CompiledConfig>>();
const NUMBERS_MAX = 256;

/** The validated numbers of a limits object: budget limit/window by name, cap limits. */
interface Numbers {
  budgets: Map<string, { limit: number; window: number }>;
  caps: Record<CapName, number>;
}

function validate(config: CompiledConfig, limits: unknown, field: string): Numbers {
  const given = record(limits, field, "an object { budgets?, caps? }");
  knownKeys(given, field, ["budgets", "caps"]);
  const budgets = new Map<string, { limit: number; window: number }>();
  const givenBudgets = given.budgets;
  const givenCaps = given.caps;
  if (givenBudgets !== undefined) {
    const byName = record(givenBudgets, `${field}.budgets`, "an object of budget name → { limit?, window? }");
    for (const name of Object.keys(byName)) {
      const base = config.budgets.find((b) => b.name === name);
      if (base === undefined) {
        throw new PolicyConfigError(`${field}.budgets.${name}`, `is not a configured budget; known: ${config.budgets.map((b) => b.name).join(", ")}`);
      }
      const budget = record(byName[name], `${field}.budgets.${name}`, "an object { limit?, window? }");
      knownKeys(budget, `${field}.budgets.${name}`, ["limit", "window"]);
      const limit = budget.limit === undefined ? base.limit : wholeNumber(budget.limit, `${field}.budgets.${name}.limit`, 1);
      const window = budget.window === undefined ? base.window : wholeNumber(budget.window, `${field}.budgets.${name}.window`, 1, WINDOW_MAX_SECONDS);
      budgets.set(name, { limit, window });
    }
  }
  const caps = { dispatch: config.caps.dispatch.limit, testSend: config.caps.testSend.limit };
  if (givenCaps !== undefined) {
    const byCap = record(givenCaps, `${field}.caps`, "an object { dispatch?, testSend? }");
    knownKeys(byCap, `${field}.caps`, ["dispatch", "testSend"]);
    for (const name of ["dispatch", "testSend"] as const) {
      if (byCap[name] === undefined) continue;
      const cap = record(byCap[name], `${field}.caps.${name}`, "an object { limit? }");
      knownKeys(cap, `${field}.caps.${name}`, ["limit"]);
      if (cap.limit !== undefined) caps[name] = wholeNumber(cap.limit, `${field}.caps.${name}.limit`, 1);
    }
  }
  return { budgets, caps };
}

/**
 * A config with other numbers: every budget's limit and window and every cap's limit replaced, the
 * operations, routes and `RateLimit-Policy` headers rebuilt over them. Limits may be 0 here (an
 * insurance share that floors to nothing refuses everything).
 */
export function withNumbers(config: CompiledConfig, budgetOf: (b: BudgetSpec) => { limit: number; window: number }, caps: Record<CapName, number>): CompiledConfig {
  const budgets = config.budgets.map((b) => {
    const { limit, window } = budgetOf(b);
    return limit === b.limit && window === b.window ? b : Object.freeze({ ...b, limit, window });
  });
  const swap = (list: readonly BudgetSpec[]): readonly BudgetSpec[] => Object.freeze(list.map((b) => budgets[b.order]!));
  const operations = new Map<CompiledOperation, CompiledOperation>();
  for (const op of config.operations) {
    const own = swap(op.budgets);
    operations.set(op, Object.freeze({ ...op, budgets: own, policyHeader: policyHeader(own) }));
  }
  const routes = remapRoutes(config.routes, (op) => operations.get(op)!);
  const fallback = swap(config.fallback.budgets);
  return Object.freeze({
    ...config,
    budgets: Object.freeze(budgets),
    caps: Object.freeze({ dispatch: Object.freeze({ limit: caps.dispatch }), testSend: Object.freeze({ limit: caps.testSend }) }),
    operations: Object.freeze([...operations.values()]),
    routes,
    fallback: Object.freeze({ budgets: fallback, policyHeader: policyHeader(fallback) }),
    settings: Object.freeze({ ...config.settings, budgets: budgetsView(budgets), caps: Object.freeze({ dispatch: Object.freeze({ limit: caps.dispatch }), testSend: Object.freeze({ limit: caps.testSend }) }) }),
  });
}

/**
 * {@link validate}, where what the host's object throws as it is read (a getter, a Proxy's trap, a
 * revoked Proxy) is a PolicyConfigError naming the field, as every other mistake in it is.
 */
function readLimits(config: CompiledConfig, limits: object, field: string): Numbers {
  try {
    return validate(config, limits, field);
  } catch (error) {
    if (error instanceof PolicyConfigError) throw error;
    throw new PolicyConfigError(field, `could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function numbersKey(numbers: Numbers): string {
  let key = `${numbers.caps.dispatch}/${numbers.caps.testSend}`;
  for (const [name, b] of numbers.budgets) key += ` ${name}=${b.limit}/${b.window}`;
  return key;
}

/**
 * The config a request is decided with: the policy's config with the plan's limits applied.
 *
 * @param config - the policy's validated config.
 * @param limits - `who.limits` (or `state.limits`); undefined: the config as is.
 * @param field - how the host's field is named in errors (`who.limits`, `limits`).
 * @returns the effective config; the same object for the same limits object.
 * @throws PolicyConfigError naming the field when the limits are invalid.
 */
export function applyLimits(config: CompiledConfig, limits: Limits | undefined, field: string): CompiledConfig {
  if (limits === undefined) return config;
  if (typeof limits !== "object" || limits === null) throw new PolicyConfigError(field, `must be an object { budgets?, caps? }; got ${limits === null ? "null" : typeof limits}`);
  let perConfig = byLimits.get(limits);
  const known = perConfig?.get(config);
  if (known !== undefined) return known;
  const numbers = readLimits(config, limits, field);
  const key = numbersKey(numbers);
  let shared = byNumbers.get(config);
  if (shared === undefined) byNumbers.set(config, (shared = new Map()));
  let effective = shared.get(key);
  if (effective === undefined) {
    effective = withNumbers(config, (b) => numbers.budgets.get(b.name) ?? b, numbers.caps);
    if (shared.size >= NUMBERS_MAX) shared.clear();
    shared.set(key, effective);
  }
  if (perConfig === undefined) byLimits.set(limits, (perConfig = new WeakMap()));
  perConfig.set(config, effective);
  return effective;
}
