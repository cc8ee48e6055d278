/**
 * Configuration: the spec's numbers as defaults, validated once, compiled into the tables the
 * decision pipeline reads. Invalid config throws PolicyConfigError naming the field.
 */
import { defaultOperations, type Method, type OperationSpec } from "./catalogue.js";
import { PolicyConfigError } from "./errors.js";
import { FAMILIES, LEVELS, parseRequirement } from "./permissions.js";
import type { CapName, Family, Level, Requirement } from "./types.js";

/** A budget's size and window (spec §8). */
export interface BudgetOptions {
  /** Requests per window, a whole number ≥ 1. */
  limit: number;
  /** Window in whole seconds ≥ 1. */
  window: number;
}

/** Everything a host may configure; every field is optional and defaults to the spec's numbers. */
export interface PolicyOptions {
  /** Budget sizes and windows; `general`, `audience`, `write` default to 600/60 s, 60/60 s, 60/60 s. Extra names add budgets. */
  budgets?: Record<string, Partial<BudgetOptions>>;
  /** Daily caps: dispatches per newsletter (default 25) and test sends per credential (default 50). */
  caps?: { dispatch?: { limit?: number }; testSend?: { limit?: number } };
  /** Extra roles: caps per family; a family left out is capped at `none`. owner/admin/editor are built in. */
  roles?: Record<string, Partial<Record<Family, Level>>>;
  /** Base of `docs_url`; the error code is appended. Default `https://docs.example.com/errors`. */
  docsUrl?: string;
  /** Unit of `Retry-After` for daily caps: `hours` (spec §7, default) or `seconds` (RFC 9110). */
  dailyRetryAfter?: "hours" | "seconds";
  /** Where a day starts for the daily caps, as an offset from UTC in minutes. Default 0 (midnight UTC). */
  dayStartsAtUtcOffsetMinutes?: number;
  /**
   * Extra operations. One with the id of a catalogue operation (e.g. `events.list`) replaces it, so
   * the permissions the spec leaves unstated can be changed; the others are added.
   */
  operations?: OperationSpec[];
  /**
   * Told of config warnings (today one: `docsUrl` left unset) each time a config is compiled.
   * Default: one warning per process, through `process.emitWarning` where it exists (Node, Bun,
   * Deno; silenced by `--no-warnings`) and `console.warn` elsewhere. Pass `() => {}` to silence it.
   */
  onWarning?: (warning: PolicyWarning) => void;
}

/** A budget, resolved. */
export interface BudgetSpec {
  readonly name: string;
  readonly limit: number;
  readonly window: number;
  /** Position in policy order: `general`, `audience`, `write`, then the host's. */
  readonly order: number;
}

/** A catalogue operation compiled for routing and planning. */
export interface CompiledOperation {
  readonly spec: OperationSpec;
  readonly id: string;
  readonly needs: Requirement | undefined;
  /** Every budget it is charged to, in policy order; `general` first. */
  readonly budgets: readonly BudgetSpec[];
  /** `RateLimit-Policy` for this operation, computed once. */
  readonly policyHeader: string;
  readonly isWrite: boolean;
  /** Literal segments (string) and parameter segments (null). */
  readonly segments: readonly (string | null)[];
  /** Index of the `{newsletter}` segment, or -1. */
  readonly newsletterAt: number;
  readonly expandPaths: readonly string[];
}

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
  /** Every budget, in policy order: `general`, `audience`, `write`, then the host's. */
  readonly budgets: readonly BudgetSpec[];
  readonly caps: Readonly<Record<CapName, { readonly limit: number }>>;
  /** Every role's cap per family: owner, admin, editor and the host's. */
  readonly roles: ReadonlyMap<string, Readonly<Record<Family, Level>>>;
  /** Base of `docs_url`, without a trailing slash. */
  readonly docsUrl: string;
  readonly dailyRetryAfter: "hours" | "seconds";
  /** Where a day starts for the daily caps, in minutes from UTC midnight. */
  readonly dayStartsAtUtcOffsetMinutes: number;
  /** The operation catalogue in force: the defaults, with the host's replacements and additions. */
  readonly operations: readonly OperationSpec[];
}

/** What the decision pipeline reads: the config compiled into routing tables. Internal. */
export interface CompiledConfig {
  readonly budgets: readonly BudgetSpec[];
  readonly caps: Readonly<Record<CapName, { readonly limit: number }>>;
  readonly roles: ReadonlyMap<string, Readonly<Record<Family, Level>>>;
  readonly docsUrl: string;
  readonly dailyRetryAfter: "hours" | "seconds";
  readonly dayOffsetMs: number;
  readonly operations: readonly CompiledOperation[];
  /** Routing table: `METHOD segmentCount` → operations with that shape. */
  readonly routes: ReadonlyMap<string, readonly CompiledOperation[]>;
  /** The operation charged to when nothing matches: `general` only. */
  readonly fallback: { readonly budgets: readonly BudgetSpec[]; readonly policyHeader: string };
  /** The public view, as `defineConfig` returned it. */
  readonly settings: PolicyConfig;
}

/** Something the host should know about its config; it does not stop the policy. */
export interface PolicyWarning {
  /** `docs_url_default`: `docsUrl` was left unset, so error bodies link to the placeholder `https://docs.example.com/errors`. */
  readonly code: "docs_url_default";
  readonly message: string;
}

const BUILT_IN_BUDGETS: Record<string, BudgetOptions> = {
  general: { limit: 600, window: 60 },
  audience: { limit: 60, window: 60 },
  write: { limit: 60, window: 60 },
};

const ALL_WRITE = Object.freeze(Object.fromEntries(FAMILIES.map((f) => [f, "write"])) as Record<Family, Level>);

/** owner and admin can grant everything; an editor holds at most `settings: read` (spec §5.6). */
const BUILT_IN_ROLES: ReadonlyArray<[string, Readonly<Record<Family, Level>>]> = [
  ["owner", ALL_WRITE],
  ["admin", ALL_WRITE],
  ["editor", Object.freeze({ ...ALL_WRITE, settings: "read" as Level })],
];

const METHODS: readonly Method[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const NAME = /^[a-z][a-z0-9_-]{0,31}$/;
const compiled = new WeakMap<object, CompiledConfig>();
const fromOptions = new WeakMap<object, CompiledConfig>();
const DEFAULT_DOCS_URL = "https://docs.example.com/errors";
/** Once per process (per realm), whichever copy of the library compiles a config first. */
const WARNED = Symbol.for("newsletter-policy.warned.docs_url_default");

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Host typos fail loudly: a key the option does not know names itself (DESIGN §10). */
export function knownKeys(value: Record<string, unknown>, field: string, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      const where = field === "" ? key : `${field}.${key}`;
      throw new PolicyConfigError(where, `is not an option here; known: ${known.join(", ")}`);
    }
  }
}

export function record(value: unknown, field: string, what: string): Record<string, unknown> {
  if (!isRecord(value)) throw new PolicyConfigError(field, `must be ${what}; got ${value === null ? "null" : typeof value}`);
  return value;
}

const OPTION_KEYS = ["budgets", "caps", "roles", "docsUrl", "dailyRetryAfter", "dayStartsAtUtcOffsetMinutes", "operations", "onWarning"] as const;
const OPERATION_KEYS = ["id", "method", "path", "needs", "budgets", "cap", "filters", "expand", "paginated", "list"] as const;

export function wholeNumber(value: unknown, field: string, min: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new PolicyConfigError(field, `must be a whole number ≥ ${min}; got ${String(value)}`);
  }
  return value;
}

function resolveBudgets(options: PolicyOptions["budgets"]): BudgetSpec[] {
  if (options !== undefined && !isRecord(options)) throw new PolicyConfigError("budgets", "must be an object");
  const names = [...Object.keys(BUILT_IN_BUDGETS), ...Object.keys(options ?? {}).filter((n) => !(n in BUILT_IN_BUDGETS))];
  return names.map((name, order) => {
    if (!NAME.test(name)) throw new PolicyConfigError(`budgets.${name}`, "must be named in lower case: a-z, 0-9, _ or -");
    const given = options !== undefined && Object.hasOwn(options, name) ? record(options[name], `budgets.${name}`, "an object { limit, window }") : {};
    knownKeys(given, `budgets.${name}`, ["limit", "window"]);
    const base = BUILT_IN_BUDGETS[name];
    const limit = wholeNumber(given.limit ?? base?.limit, `budgets.${name}.limit`, 1);
    const window = wholeNumber(given.window ?? base?.window, `budgets.${name}.window`, 1);
    return Object.freeze({ name, limit, window, order });
  });
}

function resolveRoles(options: PolicyOptions["roles"]): Map<string, Readonly<Record<Family, Level>>> {
  const roles = new Map(BUILT_IN_ROLES);
  if (options === undefined) return roles;
  if (!isRecord(options)) throw new PolicyConfigError("roles", "must be an object of role name → family caps");
  for (const [name, caps] of Object.entries(options)) {
    if (roles.has(name)) throw new PolicyConfigError(`roles.${name}`, "is built in; give your role another name");
    if (!isRecord(caps)) throw new PolicyConfigError(`roles.${name}`, "must be an object of family → level");
    const resolved = {} as Record<Family, Level>;
    for (const family of FAMILIES) resolved[family] = "none";
    for (const [family, level] of Object.entries(caps)) {
      if (!(FAMILIES as readonly string[]).includes(family)) {
        throw new PolicyConfigError(`roles.${name}.${family}`, `is not a family; use one of ${FAMILIES.join(", ")}`);
      }
      if (!(LEVELS as readonly unknown[]).includes(level)) {
        throw new PolicyConfigError(`roles.${name}.${family}`, `must be none, read or write; got ${String(level)}`);
      }
      resolved[family as Family] = level as Level;
    }
    roles.set(name, Object.freeze(resolved));
  }
  return roles;
}

export function policyHeader(budgets: readonly BudgetSpec[]): string {
  // spec §8: each as a quoted name, q=<limit>, w=<window seconds>, separated by semicolons
  return budgets.map((b) => `"${b.name}";q=${b.limit};w=${b.window}`).join(", ");
}

function compileOperation(spec: OperationSpec, field: string, budgets: readonly BudgetSpec[]): CompiledOperation {
  if (!isRecord(spec)) throw new PolicyConfigError(field, "must be an operation object");
  knownKeys(spec as unknown as Record<string, unknown>, field, OPERATION_KEYS);
  if (typeof spec.id !== "string" || spec.id === "") throw new PolicyConfigError(`${field}.id`, "must be a non-empty string");
  if (spec.budgets !== undefined && (!Array.isArray(spec.budgets) || spec.budgets.some((b) => typeof b !== "string"))) {
    throw new PolicyConfigError(`${field}.budgets`, "must be an array of budget names");
  }
  if (spec.paginated !== undefined && typeof spec.paginated !== "boolean") throw new PolicyConfigError(`${field}.paginated`, "must be true or false");
  if (!METHODS.includes(spec.method)) throw new PolicyConfigError(`${field}.method`, `must be one of ${METHODS.join(", ")}`);
  if (typeof spec.path !== "string" || !spec.path.startsWith("/")) {
    throw new PolicyConfigError(`${field}.path`, "must be a path template starting with /");
  }
  const needs = spec.needs === undefined ? undefined : parseRequirement(spec.needs);
  if (needs === null) throw new PolicyConfigError(`${field}.needs`, `must read "<family>: <level>" or "account: read"; got ${String(spec.needs)}`);
  const segments = spec.path === "/" ? [] : spec.path.slice(1).split("/");
  if (segments.some((s) => s === "")) throw new PolicyConfigError(`${field}.path`, "has an empty segment");
  const newsletterAt = segments.indexOf("{newsletter}");
  const isWrite = spec.method !== "GET";
  const wanted = new Set(["general", ...(spec.budgets ?? []), ...(isWrite ? ["write"] : [])]);
  for (const name of wanted) {
    if (!budgets.some((b) => b.name === name)) {
      throw new PolicyConfigError(`${field}.budgets`, `names "${name}", which is not a configured budget`);
    }
  }
  const own = budgets.filter((b) => wanted.has(b.name));
  if (spec.cap !== undefined && spec.cap !== "dispatch" && spec.cap !== "testSend") {
    throw new PolicyConfigError(`${field}.cap`, "must be dispatch or testSend");
  }
  if (spec.cap !== undefined && (needs === "account: read" || (newsletterAt < 0 && !segments.some((s) => s.startsWith("{"))))) {
    throw new PolicyConfigError(`${field}.cap`, "needs an operation on a newsletter's resource");
  }
  for (const [path, need] of Object.entries(spec.expand ?? {})) {
    if (parseRequirement(need) === null) throw new PolicyConfigError(`${field}.expand.${path}`, "must be a permission");
  }
  for (const [name, rule] of Object.entries(spec.filters ?? {})) {
    if (!isRecord(rule) || !Array.isArray(rule.reader) || rule.reader.some((v) => typeof v !== "string")) {
      throw new PolicyConfigError(`${field}.filters.${name}.reader`, "must be an array of strings");
    }
    if (rule.specCase !== undefined && rule.specCase !== 4 && rule.specCase !== 5 && rule.specCase !== 6) {
      throw new PolicyConfigError(`${field}.filters.${name}.specCase`, "must be 4, 5 or 6 (spec §7's insufficient_scope rows)");
    }
  }
  if (spec.list !== undefined) {
    if (!isRecord(spec.list) || typeof spec.list.field !== "string") throw new PolicyConfigError(`${field}.list.field`, "must be a string");
    const min = wholeNumber(spec.list.min, `${field}.list.min`, 0);
    wholeNumber(spec.list.max, `${field}.list.max`, Math.max(min, 1));
  }
  return Object.freeze({
    spec,
    id: spec.id,
    needs: needs ?? undefined,
    budgets: own,
    policyHeader: policyHeader(own),
    isWrite,
    segments: segments.map((s) => (s.startsWith("{") && s.endsWith("}") ? null : s)),
    newsletterAt,
    expandPaths: Object.keys(spec.expand ?? {}),
  });
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
  const budgets = resolveBudgets(options.budgets);
  const caps = record(options.caps ?? {}, "caps", "an object { dispatch?, testSend? }");
  knownKeys(caps, "caps", ["dispatch", "testSend"]);
  const capLimit = (name: "dispatch" | "testSend", fallback: number): number => {
    if (caps[name] === undefined) return fallback;
    const cap = record(caps[name], `caps.${name}`, "an object { limit }");
    knownKeys(cap, `caps.${name}`, ["limit"]);
    return wholeNumber(cap.limit ?? fallback, `caps.${name}.limit`, 1);
  };
  const dispatch = capLimit("dispatch", 25);
  const testSend = capLimit("testSend", 50);
  if (options.onWarning !== undefined && typeof options.onWarning !== "function") throw new PolicyConfigError("onWarning", "must be a function (warning) => void");
  const docsUrl = options.docsUrl ?? DEFAULT_DOCS_URL;
  const parsedUrl = typeof docsUrl === "string" && URL.canParse(docsUrl) ? new URL(docsUrl) : undefined;
  // spec §2: docs_url is `{docs_url}/<code>`, so the base is an http(s) URL without query or fragment
  if (parsedUrl === undefined || (parsedUrl.protocol !== "https:" && parsedUrl.protocol !== "http:") || parsedUrl.search !== "" || parsedUrl.hash !== "") {
    throw new PolicyConfigError("docsUrl", `must be an absolute http(s) URL without a query or fragment; got ${String(docsUrl)}`);
  }
  const dailyRetryAfter = options.dailyRetryAfter ?? "hours";
  if (dailyRetryAfter !== "hours" && dailyRetryAfter !== "seconds") {
    throw new PolicyConfigError("dailyRetryAfter", `must be "hours" or "seconds"`);
  }
  const offset = options.dayStartsAtUtcOffsetMinutes ?? 0;
  if (typeof offset !== "number" || !Number.isInteger(offset) || Math.abs(offset) >= 24 * 60) {
    throw new PolicyConfigError("dayStartsAtUtcOffsetMinutes", "must be a whole number of minutes between -1439 and 1439");
  }
  if (options.operations !== undefined && !Array.isArray(options.operations)) {
    throw new PolicyConfigError("operations", "must be an array of operations");
  }
  // An operation with a built-in's id replaces it (DESIGN §9: the unstated permissions are
  // configurable); any other id adds an operation.
  const given = (options.operations ?? []).map((spec, i) => ({ spec, field: `operations[${i}]` }));
  const builtInIds = new Set(defaultOperations.map((op) => op.id));
  const replaced = new Map(given.filter((g) => isRecord(g.spec) && builtInIds.has(g.spec.id)).map((g) => [g.spec.id, g]));
  const entries = [
    ...defaultOperations.map((spec, i) => replaced.get(spec.id) ?? { spec, field: `defaultOperations[${i}]` }),
    ...given.filter((g) => !replaced.has(g.spec?.id) || replaced.get(g.spec.id) !== g),
  ];
  const operations = entries.map(({ spec, field }) => compileOperation(spec, field, budgets));
  const routes = new Map<string, CompiledOperation[]>();
  const ids = new Set<string>();
  operations.forEach((op, i) => {
    const field = entries[i]!.field;
    if (ids.has(op.id)) throw new PolicyConfigError(`${field}.id`, `repeats the id "${op.id}"`);
    ids.add(op.id);
    const bucket = `${op.spec.method} ${op.segments.length}`;
    const list = routes.get(bucket) ?? [];
    const clash = list.find((other) => other.segments.every((s, j) => s === op.segments[j]));
    if (clash) throw new PolicyConfigError(`${field}.path`, `matches the same requests as "${clash.id}"`);
    // Literal segments win over parameters: more literals first.
    list.push(op);
    list.sort((a, b) => b.segments.filter((s) => s !== null).length - a.segments.filter((s) => s !== null).length);
    routes.set(bucket, list);
  });
  const general = budgets.filter((b) => b.name === "general");
  const capLimits = Object.freeze({ dispatch: Object.freeze({ limit: dispatch }), testSend: Object.freeze({ limit: testSend }) });
  const roles = resolveRoles(options.roles);
  const base = docsUrl.replace(/\/+$/, "");
  const settings = Object.freeze({
    budgets,
    caps: capLimits,
    roles,
    docsUrl: base,
    dailyRetryAfter,
    dayStartsAtUtcOffsetMinutes: offset,
    operations: Object.freeze(operations.map((op) => op.spec)),
  }) as unknown as PolicyConfig;
  const config: CompiledConfig = Object.freeze({
    budgets,
    caps: capLimits,
    roles,
    docsUrl: base,
    dailyRetryAfter,
    dayOffsetMs: offset * 60_000,
    operations,
    routes,
    fallback: Object.freeze({ budgets: general, policyHeader: policyHeader(general) }),
    settings,
  });
  compiled.set(settings, config);
  if (options.docsUrl === undefined) warn(options.onWarning, { code: "docs_url_default", message: DOCS_URL_WARNING });
  return settings;
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
  const flags = globalThis as { [WARNED]?: true };
  if (flags[WARNED]) return;
  flags[WARNED] = true;
  const emit = (globalThis as { process?: { emitWarning?: (message: string, options: { type: string; code: string }) => void } }).process?.emitWarning;
  if (typeof emit === "function") emit(warning.message, { type: "NewsletterPolicyWarning", code: "NEWSLETTER_POLICY_DOCS_URL_DEFAULT" });
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
