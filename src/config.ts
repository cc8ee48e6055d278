/**
 * Configuration: the spec's numbers as defaults, validated once (config-fields.ts), compiled into
 * the tables the decision pipeline reads (operations.ts, router.ts). Invalid config throws
 * PolicyConfigError naming the field.
 */
import type { OperationSpec } from "./catalogue.js";
import type { BudgetSpec, PolicyOptions, PolicyWarning } from "./config-types.js";
import { DEFAULT_DOCS_URL, knownKeys, record, resolveBudgets, resolveCaps, resolveDailyRetryAfter, resolveDayOffset, resolveDocsUrl, resolveRoles } from "./config-fields.js";
import { PolicyConfigError } from "./errors.js";
import { checkReplacements, compileOperation, operationEntries, policyHeader, type CompiledOperation, type OperationEntry } from "./operations.js";
import { buildRoutes, type RouteTable } from "./router.js";
import type { CapName, Family, Level } from "./types.js";


declare const compiledByDefineConfig: unique symbol;

/**
 * A validated configuration, as {@link defineConfig} resolved it: the settings in force, with every
 * default filled in. Read-only data; the compiled tables the policy decides with stay inside the
 * library. Only `defineConfig` makes one (the type is branded, so an object literal is not one:
 * pass options to `defineConfig`, or straight to `evaluate`/`createPolicy`).
 */
export interface PolicyConfig {
  /** @internal brand: made by `defineConfig` only. */
  readonly [compiledByDefineConfig]: true;
  /**
   * Every budget by name, as the options spell them (`config.budgets.general.limit`): `general`,
   * `audience`, `write`, then the host's, each with its limit and window (seconds).
   */
  readonly budgets: {
    readonly general: Readonly<{ limit: number; window: number }>;
    readonly audience: Readonly<{ limit: number; window: number }>;
    readonly write: Readonly<{ limit: number; window: number }>;
    readonly [name: string]: Readonly<{ limit: number; window: number }>;
  };
  readonly caps: Readonly<Record<CapName, { readonly limit: number }>>;
  /** Every role's cap per family, by name: owner, admin, editor and the host's (`config.roles.editor.settings` is `"read"`). */
  readonly roles: {
    readonly owner: Readonly<Record<Family, Level>>;
    readonly admin: Readonly<Record<Family, Level>>;
    readonly editor: Readonly<Record<Family, Level>>;
    readonly [name: string]: Readonly<Record<Family, Level>>;
  };
  /** Base of `docs_url`, without a trailing slash. */
  readonly docsUrl: string;
  readonly dailyRetryAfter: "hours" | "seconds";
  /** Where a day starts for the daily caps: the UTC offset (minutes) of the time zone whose midnight it is (60: midnight at UTC+01:00, 23:00 UTC). */
  readonly dayStartsAtUtcOffsetMinutes: number;
  /** The operation catalogue in force: the defaults, with the host's replacements and additions. */
  readonly operations: readonly OperationSpec[];
}


/** What the decision pipeline reads: the config compiled into routing tables. Internal. */
export interface CompiledConfig extends Pick<PolicyConfig, "caps" | "docsUrl" | "dailyRetryAfter"> {
  /** Every budget, in policy order: `general`, `audience`, `write`, then the host's. */
  readonly budgets: readonly BudgetSpec[];
  /** Every role's cap per family: owner, admin, editor and the host's. */
  readonly roles: ReadonlyMap<string, Readonly<Record<Family, Level>>>;
  readonly dayOffsetMs: number;
  readonly operations: readonly CompiledOperation[];
  readonly routes: RouteTable;
  /** The operation charged to when nothing matches: `general` only. */
  readonly fallback: { readonly budgets: readonly BudgetSpec[]; readonly policyHeader: string };
  /** The public view, as `defineConfig` returned it. */
  readonly settings: PolicyConfig;
}

const compiled = new WeakMap<object, CompiledConfig>();
const fromOptions = new WeakMap<object, CompiledConfig>();
/** Once per process (per realm), whichever copy of the library compiles a config first. */
const WARNED = Symbol.for("newsletter-policy.warned.docs_url_default");
const WARNED_NEEDS = Symbol.for("newsletter-policy.warned.operation_needs_nothing");
const OPTION_KEYS = ["budgets", "caps", "roles", "docsUrl", "dailyRetryAfter", "dayStartsAtUtcOffsetMinutes", "operations", "onWarning"] as const;

/**
 * Entries as a frozen object by name, without a prototype: `view[name]` is an entry or undefined,
 * never `Object.prototype`'s `constructor` or `toString` (host code that checks a role name so would
 * take those for roles; found by a review). On an object without a prototype, `__proto__` (a host's
 * role may be named so) is an own property like any other.
 */
function byName<T>(entries: Iterable<readonly [string, T]>): Readonly<Record<string, T>> {
  const view: Record<string, T> = Object.create(null);
  for (const [name, value] of entries) view[name] = value;
  return Object.freeze(view);
}

/**
 * The budgets as the options spell them (`budgets.general.limit`): what `defineConfig` hands back
 * reads, and is given again (`defineConfig({ ...config, … })`), in the shape it was written in.
 */
export function budgetsView(budgets: readonly BudgetSpec[]): PolicyConfig["budgets"] {
  return byName(budgets.map((b) => [b.name, Object.freeze({ limit: b.limit, window: b.window })] as const)) as PolicyConfig["budgets"];
}

/** Every role's caps by name (`config.roles.editor.settings`). */
function rolesView(roles: ReadonlyMap<string, Readonly<Record<Family, Level>>>): PolicyConfig["roles"] {
  return byName(roles) as PolicyConfig["roles"];
}

/**
 * Validates options and compiles the policy's tables. Every field is optional; the defaults are the
 * spec's numbers.
 *
 * @param options - overrides; see {@link PolicyOptions}. Default: the spec as written.
 * @returns a frozen {@link PolicyConfig} to pass to `evaluate` or `createPolicy`.
 * @throws PolicyConfigError naming the offending field.
 * @example
 * const config = defineConfig({ budgets: { audience: { limit: 120 } }, dailyRetryAfter: "seconds" });
 */
export function defineConfig(options: PolicyOptions = {}): PolicyConfig {
  knownKeys(record(options, "config", "an object of options"), "", OPTION_KEYS);
  if (compiled.has(options)) throw new PolicyConfigError("config", "is already a compiled config (what defineConfig returns): pass it as it is, e.g. createPolicy({ config })");
  // a list is the budgets of a compiled config from before 0.1.0 was final, or a mistake: the options' shape is named
  if (Array.isArray(options.budgets as unknown)) {
    throw new PolicyConfigError("budgets", "must be an object of budget name → { limit, window } (e.g. { audience: { limit: 120, window: 60 } }); got an array");
  }
  const budgets = resolveBudgets(options.budgets);
  const caps = resolveCaps(options.caps);
  if (options.onWarning !== undefined && typeof options.onWarning !== "function") throw new PolicyConfigError("onWarning", "must be a function (warning) => void");
  const docsUrl = resolveDocsUrl(options.docsUrl ?? DEFAULT_DOCS_URL);
  const dailyRetryAfter = resolveDailyRetryAfter(options.dailyRetryAfter ?? "hours");
  const offset = resolveDayOffset(options.dayStartsAtUtcOffsetMinutes ?? 0);
  const entries = operationEntries(options.operations);
  const operations = entries.map((entry) => compileOperation(entry, budgets));
  const routes = buildRoutes(operations, entries);
  checkReplacements(entries);
  // a budget no operation charges is a misspelling (audiance) or an operation left out: its limit would hold nothing back (found by a config review)
  for (const b of budgets) {
    if (!operations.some((op) => op.budgets.includes(b))) {
      throw new PolicyConfigError(`budgets.${b.name}`, `is charged by no operation: name it in an operation's budgets, or check its spelling (general, audience and write are the spec's)`);
    }
  }
  const general = budgets.filter((b) => b.name === "general");
  const roles = resolveRoles(options.roles);
  const settings = Object.freeze({
    budgets: budgetsView(budgets),
    caps,
    roles: rolesView(roles),
    docsUrl,
    dailyRetryAfter,
    dayStartsAtUtcOffsetMinutes: offset,
    operations: Object.freeze(operations.map((op) => op.spec)),
  }) as unknown as PolicyConfig;
  const config: CompiledConfig = Object.freeze({
    budgets,
    caps,
    roles,
    docsUrl,
    dailyRetryAfter,
    dayOffsetMs: offset * 60_000,
    operations,
    routes,
    fallback: Object.freeze({ budgets: general, policyHeader: policyHeader(general) }),
    settings,
  });
  compiled.set(settings, config);
  if (options.docsUrl === undefined) warn(options.onWarning, { code: "docs_url_default", message: DOCS_URL_WARNING });
  const open = entries.filter((entry, i) => {
    const op = operations[i]!;
    return op.reachWhenNamed && (op.isWrite || op.segments.includes(null));
  });
  if (open.length > 0) warn(options.onWarning, { code: "operation_needs_nothing", message: needsNothingWarning(open) });
  return settings;
}

/** The warning for host operations that write or take a resource's id and need nothing (a `needs` left out by mistake lets every credential through). */
function needsNothingWarning(entries: readonly OperationEntry[]): string {
  const named = entries.map((e) => `${e.field} (${e.spec.method} ${e.spec.path})`).join(", ");
  return (
    `newsletter-policy: ${named} ${entries.length === 1 ? "has" : "have"} no needs, so any credential passes ${entries.length === 1 ? "its" : "their"} permission check, whatever it was granted ` +
    `(a newsletter the request names, PolicyRequest.newsletter, is still checked for reach). Give ${entries.length === 1 ? "it" : "each"} the permission it needs, e.g. needs: "webhooks: write", unless every credential is meant to pass.`
  );
}

const DOCS_URL_WARNING =
  `newsletter-policy: the docsUrl option is not set, so every error body's docs_url points at the placeholder ${DEFAULT_DOCS_URL}/<code>. ` +
  `Set it to your own error docs: defineConfig({ docsUrl: "https://your.api/docs/errors" }) (or createPolicy({ config: { docsUrl } })).`;

/** The host's `onWarning`, or once per process on the runtime's warning channel. */
function warn(onWarning: PolicyOptions["onWarning"], warning: PolicyWarning): void {
  if (onWarning !== undefined) {
    onWarning(warning);
    return;
  }
  // once per process and code (a config compiled again, or by many policies, is told once)
  const flag = warning.code === "docs_url_default" ? WARNED : WARNED_NEEDS;
  const flags = globalThis as { [flag]?: true };
  if (flags[flag]) return;
  flags[flag] = true;
  const emit = (globalThis as { process?: { emitWarning?: (message: string, options: { type: string; code: string }) => void } }).process?.emitWarning;
  if (typeof emit === "function") emit(warning.message, { type: "NewsletterPolicyWarning", code: `NEWSLETTER_POLICY_${warning.code.toUpperCase()}` });
  else console.warn(warning.message);
}

/**
 * The compiled config to decide with: that of a config `defineConfig` made, the defaults for
 * undefined, or options compiled once (remembered by identity).
 */
export function resolveConfig(config: PolicyConfig | PolicyOptions | undefined): CompiledConfig {
  if (config === undefined) return defaultConfig();
  const known = compiled.get(config);
  if (known !== undefined) return known;
  let done = fromOptions.get(config);
  if (!done) {
    done = compiled.get(defineConfig(config as PolicyOptions))!;
    fromOptions.set(config, done);
  }
  return done;
}

let defaults: CompiledConfig | undefined;
function defaultConfig(): CompiledConfig {
  defaults ??= compiled.get(defineConfig())!;
  return defaults;
}
